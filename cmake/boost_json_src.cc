// cmake/boost_json_src.cc — Boost.JSON compiled into this build (its
// documented header-only use: <boost/json/src.hpp> in exactly one
// translation unit), for machines with Boost's headers but no compiled
// libboost_json (cmake/boost_json.cmake). Every other file includes
// <boost/json.hpp> as usual.
#include <boost/json/src.hpp>
