# Install.cmake — what `cmake --install` adds beside the library, headers,
# CLI and modules (installed where they are built): a default backend.ini,
# a CMake package for applications (find_package(Plinth) -> Plinth::plinth),
# one for module authors (find_package(PlinthSDK) -> plinth_add_module), and
# plinth.pc. Every path written into them is relative to the file itself,
# so an installed tree copied to another prefix keeps working.

set(PLINTH_INSTALL_GEN ${CMAKE_BINARY_DIR}/install-files)
set(PLINTH_FULL_MODULEDIR ${CMAKE_INSTALL_FULL_LIBDIR}/plinth/modules)
set(PLINTH_FULL_CONFDIR ${CMAKE_INSTALL_FULL_SYSCONFDIR}/plinth)

# backend.ini: the repository's, its module folder made the installed one
# (relative to the file), the compiled-subgraph cache off (an installed
# configuration folder is not writable by its users; set cache_dir to a
# folder of your own).
file(READ ${PROJECT_SOURCE_DIR}/backend.ini PLINTH_INI)
file(RELATIVE_PATH PLINTH_CONF_TO_MODULES ${PLINTH_FULL_CONFDIR} ${PLINTH_FULL_MODULEDIR})
string(REGEX REPLACE "\nmodules = [^\n]*" "\nmodules = ${PLINTH_CONF_TO_MODULES}" PLINTH_INI
       "${PLINTH_INI}")
string(REGEX REPLACE "\ncache_dir = [^\n]*" "\ncache_dir =" PLINTH_INI "${PLINTH_INI}")
file(WRITE ${PLINTH_INSTALL_GEN}/backend.ini "${PLINTH_INI}")
install(FILES ${PLINTH_INSTALL_GEN}/backend.ini DESTINATION ${CMAKE_INSTALL_SYSCONFDIR}/plinth)

# The CMake packages, in <libdir>/cmake/Plinth and <libdir>/cmake/PlinthSDK.
set(PLINTH_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake)
file(RELATIVE_PATH PLINTH_CMAKE_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/cmake/Plinth
     ${CMAKE_INSTALL_PREFIX})
file(WRITE ${PLINTH_INSTALL_GEN}/PlinthConfig.cmake "\
# find_package(Plinth): the imported target Plinth::plinth (libplinth and
# its headers, plinth/plinth.h), and PLINTH_MODULE_DIR, the installed modules.
get_filename_component(_plinth_prefix \"\${CMAKE_CURRENT_LIST_DIR}/${PLINTH_CMAKE_TO_PREFIX}\" ABSOLUTE)
if(NOT TARGET Plinth::plinth)
  add_library(Plinth::plinth SHARED IMPORTED)
  set_target_properties(Plinth::plinth PROPERTIES
    IMPORTED_LOCATION \"\${_plinth_prefix}/${CMAKE_INSTALL_LIBDIR}/libplinth.so.${PROJECT_VERSION}\"
    IMPORTED_SONAME libplinth.so.${PROJECT_VERSION_MAJOR}
    INTERFACE_INCLUDE_DIRECTORIES \"\${_plinth_prefix}/${CMAKE_INSTALL_INCLUDEDIR}\")
endif()
set(PLINTH_MODULE_DIR \"\${_plinth_prefix}/${CMAKE_INSTALL_LIBDIR}/plinth/modules\")
set(Plinth_FOUND TRUE)
unset(_plinth_prefix)
")
file(WRITE ${PLINTH_INSTALL_GEN}/PlinthSDKConfig.cmake "\
# find_package(PlinthSDK): plinth_add_module(NAME SOURCES ... [LIBRARIES ...]
# [INCLUDES ...]) against the installed SDK headers (sdk/README.md).
get_filename_component(_plinth_prefix \"\${CMAKE_CURRENT_LIST_DIR}/${PLINTH_CMAKE_TO_PREFIX}\" ABSOLUTE)
set(PLINTH_SDK_INCLUDE_DIR \"\${_plinth_prefix}/${CMAKE_INSTALL_INCLUDEDIR}\")
include(\"\${CMAKE_CURRENT_LIST_DIR}/PlinthModule.cmake\")
set(PlinthSDK_FOUND TRUE)
unset(_plinth_prefix)
")
include(CMakePackageConfigHelpers)
foreach(pkg Plinth PlinthSDK)
  write_basic_package_version_file(${PLINTH_INSTALL_GEN}/${pkg}ConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
  install(FILES ${PLINTH_INSTALL_GEN}/${pkg}Config.cmake
                ${PLINTH_INSTALL_GEN}/${pkg}ConfigVersion.cmake
          DESTINATION ${PLINTH_CMAKEDIR}/${pkg})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/sdk/cmake/PlinthModule.cmake
        DESTINATION ${PLINTH_CMAKEDIR}/PlinthSDK)

# plinth.pc, its prefix relative to the file (pkg-config's ${pcfiledir}).
file(RELATIVE_PATH PLINTH_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
file(WRITE ${PLINTH_INSTALL_GEN}/plinth.pc "\
prefix=\${pcfiledir}/${PLINTH_PC_TO_PREFIX}
libdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}
includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}
moduledir=\${libdir}/plinth/modules

Name: plinth
Description: Plinth deep-learning runtime (core library; backends are modules)
Version: ${PROJECT_VERSION}
Libs: -L\${libdir} -lplinth
Cflags: -I\${includedir}
")
install(FILES ${PLINTH_INSTALL_GEN}/plinth.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
