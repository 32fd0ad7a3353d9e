#pragma once
// Giving freed heap back to the kernel after large inputs are dropped.

#include <cstddef>

namespace loadwatch {

/// Freed heap memory beyond which note_heap_freed trims.
inline constexpr std::size_t kHeapTrimAfterBytes = 8u << 20;

/// Tells that `bytes` of heap were just freed (a scrape body, a parsed textfile). glibc keeps
/// freed pages of its arenas mapped, so after one burst of big inputs RSS would stay at its
/// high-water mark; once kHeapTrimAfterBytes have been freed in all, this calls malloc_trim
/// (a few ms on a large heap, so never per small input). Thread-safe.
void note_heap_freed(std::size_t bytes);

}  // namespace loadwatch
