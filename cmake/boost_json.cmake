# Boost::json for a TCL_TRAINER_ONLY build: the compiled library when Boost's
# CMake package has it, else Boost.JSON built from its headers into the
# static library tcl_boost_json (cmake/boost_json_src.cc) under the same
# target name, so core/ links Boost::json either way.
# TCL_BOOST_JSON_FROM_HEADERS=ON takes the header path even where the
# compiled library exists (to check that path on a full Boost).
option(TCL_BOOST_JSON_FROM_HEADERS "Build Boost.JSON from its headers (TCL_TRAINER_ONLY)" OFF)
if(TCL_BOOST_JSON_FROM_HEADERS)
  find_package(Boost 1.81 CONFIG QUIET)
else()
  find_package(Boost 1.81 CONFIG QUIET OPTIONAL_COMPONENTS json)
endif()
if(NOT Boost_FOUND)
  find_package(Boost 1.81 REQUIRED)  # headers only, through CMake's FindBoost
endif()
if(TARGET Boost::json)
  message(STATUS "Boost.JSON: the compiled library")
  return()
endif()
message(STATUS "Boost.JSON: built from its headers (cmake/boost_json_src.cc)")
add_library(tcl_boost_json STATIC ${CMAKE_CURRENT_LIST_DIR}/boost_json_src.cc)
target_link_libraries(tcl_boost_json PUBLIC Boost::headers)
add_library(Boost::json ALIAS tcl_boost_json)
