# clusterd_embed_files(TARGET FILE...): compiles each FILE's bytes into
# TARGET (embed_file.cmake writes the source, in the build folder). A FILE
# named dashboard.js is clusterd::embedded::dashboard_js (unsigned char[],
# NUL-terminated) and dashboard_js_size; editing the file rebuilds it.
include_guard(GLOBAL)

function(clusterd_embed_files target)
  set(script "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/embed_file.cmake")
  foreach(input ${ARGN})
    get_filename_component(input "${input}" ABSOLUTE)
    get_filename_component(name "${input}" NAME)
    string(MAKE_C_IDENTIFIER "${name}" symbol)
    set(output "${CMAKE_CURRENT_BINARY_DIR}/embedded/${target}/${symbol}.cc")
    get_target_property(sources ${target} SOURCES)
    if(output IN_LIST sources)
      message(FATAL_ERROR "clusterd_embed_files(${target}): two files make the symbol ${symbol}; rename one")
    endif()
    add_custom_command(
      OUTPUT "${output}"
      COMMAND ${CMAKE_COMMAND} -DINPUT=${input} -DOUTPUT=${output} -DSYMBOL=${symbol}
              -P "${script}"
      DEPENDS "${input}" "${script}"
      COMMENT "Embedding ${name} into ${target}"
      VERBATIM)
    target_sources(${target} PRIVATE "${output}")
  endforeach()
endfunction()
