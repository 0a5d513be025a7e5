# Writes a C++ source that holds one file's bytes, so that the binary carries
# the file and never reads it from disk (an installed package has no source
# tree). Run as a script by clusterd_embed_files (embed_files.cmake):
#   cmake -DINPUT=FILE -DOUTPUT=FILE.cc -DSYMBOL=NAME -P embed_file.cmake
# The bytes go in as a hex array, which holds any byte (NUL, quotes, a raw
# string's delimiter) as it is. The array ends with one NUL past the file's
# bytes, so an empty file still makes a valid array; NAME_size counts the
# file's bytes only. Both are in namespace clusterd::embedded.
foreach(required INPUT OUTPUT SYMBOL)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "embed_file.cmake: -D${required}= is missing")
  endif()
endforeach()
if(NOT SYMBOL MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
  message(FATAL_ERROR "embed_file.cmake: SYMBOL '${SYMBOL}' is not a C++ identifier")
endif()

file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
# Sixteen bytes to a line.
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REPEAT "0x[0-9a-f][0-9a-f]," 16 line)
string(REGEX REPLACE "(${line})" "\\1\n" bytes "${bytes}")

file(WRITE "${OUTPUT}" "// Generated from ${INPUT} by cmake/embed_file.cmake: edit that file, not this one.
#include <cstddef>

namespace clusterd::embedded {

extern const unsigned char ${SYMBOL}[] = {
${bytes}0x00};
extern const std::size_t ${SYMBOL}_size = ${size};

}  // namespace clusterd::embedded
")
