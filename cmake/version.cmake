# The version the binaries print and the .deb carries: CMake's project
# version, refined by `git describe` so that two builds of different commits
# never share a version. Debian-safe characters only (digits, letters, . + ~).
#   tag v0.1.0 on HEAD        -> 0.1.0
#   5 commits after v0.1.0    -> 0.1.0+5.gabc1234
#   no tag                    -> 0.1.0+gabc1234
#   uncommitted changes       -> ... .dirty
# Computed when CMake configures; scripts/package.sh configures again so a
# package always names the commit it was built from.
set(CLUSTERD_VERSION "${PROJECT_VERSION}")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" describe --tags --always --dirty --match "v[0-9]*"
                  WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}" OUTPUT_VARIABLE described
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE described_rc)
  if(described_rc EQUAL 0 AND described)
    set(dirty "")
    if(described MATCHES "-dirty$")
      set(dirty ".dirty")
      string(REGEX REPLACE "-dirty$" "" described "${described}")
    endif()
    if(described MATCHES "^v([0-9][0-9.]*)-([0-9]+)-(g[0-9a-f]+)$")
      set(CLUSTERD_VERSION "${CMAKE_MATCH_1}+${CMAKE_MATCH_2}.${CMAKE_MATCH_3}${dirty}")
    elseif(described MATCHES "^v([0-9][0-9.]*)$")
      set(CLUSTERD_VERSION "${CMAKE_MATCH_1}")
      if(dirty)
        set(CLUSTERD_VERSION "${CLUSTERD_VERSION}+dirty")
      endif()
    elseif(described MATCHES "^[0-9a-f]+$")
      set(CLUSTERD_VERSION "${PROJECT_VERSION}+g${described}${dirty}")
    endif()
  endif()
endif()
message(STATUS "clusterd version ${CLUSTERD_VERSION}")
configure_file("${PROJECT_SOURCE_DIR}/cmake/clusterd_version.h.in"
               "${PROJECT_BINARY_DIR}/generated/clusterd_version.h" @ONLY)
