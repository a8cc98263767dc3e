# PlinthModule.cmake — build a Plinth module against sdk/ alone.
#
#   include(<sdk>/cmake/PlinthModule.cmake)
#   plinth_add_module(<name> SOURCES a.c b.c [LIBRARIES lib...])
#
# makes the shared library libplinth_<name>.so with hidden visibility (only
# pl_module_entry is exported), -z defs (every symbol resolved at link time,
# so the module can never depend on the core's symbols), and, when the cache
# variable PLINTH_STAGE_DIR is set, copies the result there after each build
# (the drop-in folder the runtime scans, modules.d/ by default).

if(NOT DEFINED PLINTH_SDK_INCLUDE_DIR)
  get_filename_component(PLINTH_SDK_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../include" ABSOLUTE)
endif()

set(PLINTH_STAGE_DIR "" CACHE PATH "Folder the built modules are copied to (empty: none)")

function(plinth_add_module name)
  cmake_parse_arguments(PM "" "" "SOURCES;LIBRARIES;INCLUDES" ${ARGN})
  if(NOT PM_SOURCES)
    message(FATAL_ERROR "plinth_add_module(${name}): no SOURCES")
  endif()
  set(target plinth_${name})
  add_library(${target} SHARED ${PM_SOURCES})
  set_target_properties(${target} PROPERTIES
    C_STANDARD 11
    C_STANDARD_REQUIRED ON
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    PREFIX "lib"
    OUTPUT_NAME "plinth_${name}")
  target_include_directories(${target} PRIVATE ${PLINTH_SDK_INCLUDE_DIR} ${PM_INCLUDES})
  # PLINTH_MODULE_ALLOW_UNDEFINED: only for sanitizer builds whose runtime
  # lives in the program (Plinth's fuzz build).
  if(NOT PLINTH_MODULE_ALLOW_UNDEFINED)
    target_link_options(${target} PRIVATE "LINKER:-z,defs")
  endif()
  if(PM_LIBRARIES)
    target_link_libraries(${target} PRIVATE ${PM_LIBRARIES})
  endif()
  if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Wall -Wextra)
  endif()
  # In the Plinth tree, `cmake --install` puts every module into the
  # installed module folder (PLINTH_MODULE_INSTALL_DIR, set by the tree).
  if(PLINTH_MODULE_INSTALL_DIR)
    # a vendor library outside the system folders (CUDA's) stays found
    set_target_properties(${target} PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
    install(TARGETS ${target} LIBRARY DESTINATION ${PLINTH_MODULE_INSTALL_DIR})
  endif()
  if(PLINTH_STAGE_DIR)
    add_custom_command(TARGET ${target} POST_BUILD
      COMMAND ${CMAKE_COMMAND} -E make_directory "${PLINTH_STAGE_DIR}"
      COMMAND ${CMAKE_COMMAND} -E copy "$<TARGET_FILE:${target}>" "${PLINTH_STAGE_DIR}/"
      COMMAND chmod go-w "${PLINTH_STAGE_DIR}/$<TARGET_FILE_NAME:${target}>"
      VERBATIM)
  endif()
endfunction()
