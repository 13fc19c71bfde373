# tcl_embed_text(OUT_SOURCE NAMESPACE SYMBOL FILE)
# Writes a .cc defining `const std::string_view NAMESPACE::SYMBOL` with FILE's
# bytes, so the binary carries its own API document (no install path to find
# at run time). CMake re-configures when FILE changes.
function(tcl_embed_text out_source namespace symbol file)
  file(READ "${file}" content)
  set(delim "tcl_embed")
  string(FIND "${content}" ")${delim}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${file} contains the raw-string delimiter )${delim}\"")
  endif()
  set(out "${CMAKE_CURRENT_BINARY_DIR}/embedded_${symbol}.cc")
  file(WRITE "${out}.tmp"
    "// Generated from ${file} by cmake/embed.cmake. Do not edit.\n"
    "#include <string_view>\n"
    "namespace ${namespace} {\n"
    "extern const std::string_view ${symbol};\n"
    "const std::string_view ${symbol} = R\"${delim}(${content})${delim}\";\n"
    "}\n")
  file(COPY_FILE "${out}.tmp" "${out}" ONLY_IF_DIFFERENT)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
  set(${out_source} "${out}" PARENT_SCOPE)
endfunction()
