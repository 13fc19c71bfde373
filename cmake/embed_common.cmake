# cmake/embed_common.cmake — what the scripts that compile files into the binary share
# (registry/embed_migrations.cmake, cmake/embed_ui.cmake): a file as a byte array, and a
# generated source rewritten only when it changed.

# tcl_embed_bytes(FILE NAME WHAT OUT): OUT = "constexpr unsigned char NAME[size] = {...};", FILE's
# exact bytes (whatever they contain: CRLF, `)"`, non-ASCII), 20 a row. An empty file is an error
# naming WHAT.
function(tcl_embed_bytes file name what out)
  file(READ "${file}" hex HEX)
  string(LENGTH "${hex}" hex_length)
  if(hex_length EQUAL 0)
    message(FATAL_ERROR "${what} is empty")
  endif()
  math(EXPR size "${hex_length} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REPEAT "0x[0-9a-f][0-9a-f]," 20 row)  # CMake regexes have no {n}
  string(REGEX REPLACE "(${row})" "\\1\n    " bytes "${bytes}")
  set(${out} "constexpr unsigned char ${name}[${size}] = {\n    ${bytes}};\n" PARENT_SCOPE)
endfunction()

# tcl_write_if_changed(OUTPUT CONTENT): an unchanged set does not force a recompile.
function(tcl_write_if_changed output content)
  if(EXISTS "${output}")
    file(READ "${output}" old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${output}" "${content}")
endfunction()
