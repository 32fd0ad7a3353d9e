#include "util/heap_trim.h"

#include <malloc.h>

#include <atomic>

namespace loadwatch {

namespace {
std::atomic<std::size_t> freed{0};
}  // namespace

void tune_heap() { mallopt(M_MMAP_THRESHOLD, 256 * 1024); }

void note_heap_freed(std::size_t bytes) { freed.fetch_add(bytes, std::memory_order_relaxed); }

void trim_heap_soon() { freed.store(kHeapTrimAfterBytes, std::memory_order_relaxed); }

void trim_heap_if_due() {
  if (freed.load(std::memory_order_relaxed) < kHeapTrimAfterBytes) return;
  freed.store(0, std::memory_order_relaxed);
  malloc_trim(0);
}

}  // namespace loadwatch
