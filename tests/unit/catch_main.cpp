// Catch2's main, plus the skip exit: a run in which a test case called LWTEST_SKIP and none
// failed exits with loadwatch::test::kSkipExit (tests/lib/skip.h).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "tests/lib/skip.h"

int main(int argc, char* argv[]) {
  using loadwatch::test::kSkipExit;
  const int failed = Catch::Session().run(argc, argv);  // the number of failures, at most 255
  if (failed != 0) return failed == kSkipExit ? 1 : failed;
  return loadwatch::test::skipped_cases() > 0 ? kSkipExit : 0;
}
