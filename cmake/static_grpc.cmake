# The gRPC stack as static archives, for a program that starts often
# (clusterctl: every `status`, every poll of a DVC stage).
#
# Why: dynamically, clusterctl maps about 70 libraries, ~50 of them gRPC's
# and Abseil's, and the loader's relocations and symbol lookups over them
# were most of its CPU (`perf record` of `clusterctl status`: ld.so and the
# kernel's mapping of them ~80%). Linked from Debian's own .a files (shipped
# by the same -dev packages) it starts in about half the CPU time; see
# docs/BENCHMARKS.md, control_plane (`clusterctl status`).
#
# OpenSSL and zlib stay shared: their security updates must reach the
# program without a rebuild, and libcurl (opened for S3) brings its own.
#
# static_grpc_archives(OUT): sets OUT to the link items (archives in a
# rescanned group, then the shared libraries they need), or to nothing when
# an archive is missing, so the caller keeps the shared libraries.
function(static_grpc_archives out)
  set(${out} "" PARENT_SCOPE)
  find_package(PkgConfig QUIET)
  if(NOT PKG_CONFIG_FOUND)
    return()
  endif()
  execute_process(COMMAND ${PKG_CONFIG_EXECUTABLE} --static --libs-only-l grpc++ protobuf
                  OUTPUT_VARIABLE flags RESULT_VARIABLE failed OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(failed)
    return()
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(archives "")
  set(shared "")
  foreach(flag ${flags})
    string(REGEX REPLACE "^-l" "" name "${flag}")
    if(name MATCHES "^(grpc\\+\\+|grpc|gpr|upb|address_sorting|cares|re2|protobuf|absl_.*)$")
      find_file(archive_${name} lib${name}.a PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} /usr/lib
                NO_DEFAULT_PATH)
      if(NOT archive_${name})
        message(STATUS "clusterctl: no lib${name}.a, gRPC stays shared")
        return()
      endif()
      list(APPEND archives ${archive_${name}})
    elseif(flag MATCHES "^-l")
      list(APPEND shared ${flag})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES archives)
  list(REMOVE_DUPLICATES shared)
  # Abseil's archives refer to each other in cycles: the group is rescanned.
  set(${out} "$<LINK_GROUP:RESCAN,${archives}>" ${shared} PARENT_SCOPE)
endfunction()
