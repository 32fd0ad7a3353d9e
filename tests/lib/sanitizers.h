#pragma once
// LOADWATCH_ASAN is 1 in an AddressSanitizer build (tests/scripts/test_sanitizers.sh). Its
// allocator keeps freed memory in quarantine and adds shadow memory, so RSS bounds say nothing
// there: tests that measure memory skip those checks.

#if defined(__SANITIZE_ADDRESS__)
#define LOADWATCH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOADWATCH_ASAN 1
#endif
#endif
#ifndef LOADWATCH_ASAN
#define LOADWATCH_ASAN 0
#endif
