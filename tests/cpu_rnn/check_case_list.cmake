# Fails unless `PYTHON SCRIPT --list` prints exactly the cases WANT lists
# (cmake -P; see tests/cpu_rnn/CMakeLists.txt).
execute_process(COMMAND ${PYTHON} ${SCRIPT} --list
  OUTPUT_VARIABLE have OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(rc EQUAL 77)
  message("skipped: the script cannot run here")
  return()
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SCRIPT} --list exited ${rc}")
endif()
if(NOT have STREQUAL WANT)
  message(FATAL_ERROR "the script's cases differ from CMakeLists.txt's:\n  script: ${have}\n  cmake:  ${WANT}")
endif()
