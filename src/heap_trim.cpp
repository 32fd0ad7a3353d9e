#include "heap_trim.h"

#include <malloc.h>

#include <atomic>

namespace loadwatch {

void note_heap_freed(std::size_t bytes) {
  static std::atomic<std::size_t> freed{0};
  if (bytes == 0) return;
  std::size_t total = freed.fetch_add(bytes) + bytes;
  if (total < kHeapTrimAfterBytes) return;
  // One thread trims; others that cross the mark meanwhile find the counter reset.
  if (freed.exchange(0) >= kHeapTrimAfterBytes) malloc_trim(0);
}

}  // namespace loadwatch
