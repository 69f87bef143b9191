# Included by tests/CMakeLists.txt in the normal build (not in the sanitizer build itself): CTest
# tests that build the sanitizer tree with tests/fuzz/run (label "sanitize"), run its unit tests
# under AddressSanitizer and UndefinedBehaviorSanitizer ("sanitize") and each fuzzer for
# CDSM_FUZZ_SECONDS ("fuzz"). Any sanitizer report or fuzzer finding fails its test.
set(CDSM_SANITIZE_BUILD_DIR "${CMAKE_BINARY_DIR}-sanitize" CACHE PATH
    "Build tree of the sanitizer and fuzzer build (tests/fuzz/run)")
# 20 s each: six fuzzers take two minutes of the 2-core CI machine (CI time, issue 27); by hand
# longer (tests/fuzz/run --seconds 300 NAME).
set(CDSM_FUZZ_SECONDS 20 CACHE STRING "How long CTest runs each fuzzer")
set(fuzz_run ${CMAKE_CURRENT_LIST_DIR}/run)
set(fuzz_env "CDSM_SANITIZE_BUILD_DIR=${CDSM_SANITIZE_BUILD_DIR}")

# The build alone on the machine: it takes both cores for minutes, which would slow the VM
# tests' guests beyond their timing checks.
add_test(NAME sanitize.build COMMAND ${fuzz_run} --build-only)
set_tests_properties(sanitize.build PROPERTIES LABELS "sanitize;fuzz" TIMEOUT 2400 RUN_SERIAL TRUE
                     COST 10000
                     FIXTURES_SETUP sanitize_build ENVIRONMENT "${fuzz_env}")

# Unit tests that cannot run under the sanitizers, each with its reason (CTest regexes); the
# normal build runs them. Leaks of the libraries cdsm uses are suppressed in lsan.supp.
set(sanitize_excluded
  # Installs the sanitized static library and links a program without the sanitizers against it:
  # the sanitizer runtime is then missing.
  "^libcdsm\\.install$"
  # Loads the SPANK plugin cdsm.so into Slurm's srun, sbatch and salloc, which have no sanitizer
  # runtime: dlopen fails on its undefined __asan_* and __sancov_* symbols.
  "^slurm\\.options$"
)
list(JOIN sanitize_excluded "|" sanitize_exclude_regex)
# Each GoogleTest binary once with all its cases, the other unit tests through CTest
# (tests/fuzz/unit says why).
add_test(NAME sanitize.unit
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/unit ${CDSM_SANITIZE_BUILD_DIR} "${sanitize_exclude_regex}")
set_tests_properties(sanitize.unit PROPERTIES LABELS sanitize TIMEOUT 1800
                     FIXTURES_REQUIRED sanitize_build
                     ENVIRONMENT "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/lsan.supp:print_suppressions=0")

foreach(name request config matrix topology reply current)
  add_test(NAME fuzz.${name} COMMAND ${fuzz_run} --no-build --seconds ${CDSM_FUZZ_SECONDS} ${name})
  set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz TIMEOUT 600
                       FIXTURES_REQUIRED sanitize_build ENVIRONMENT "${fuzz_env}")
endforeach()
