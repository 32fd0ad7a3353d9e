#pragma once
// Giving freed heap back to the kernel after large inputs are dropped.

#include <cstddef>

namespace loadwatch {

/// Freed heap memory beyond which trim_heap_if_due trims.
inline constexpr std::size_t kHeapTrimAfterBytes = 8u << 20;

/// Sets glibc's malloc up for a long-running daemon fed bursts: allocations of 256 KiB and
/// more (bodies, pages, big vectors) get their own mapping, returned to the kernel when
/// freed, instead of the dynamic threshold that grows to 32 MiB after the first big free
/// and then keeps such memory in the heap. Call once at start-up, before threads.
void tune_heap();

/// Tells that `bytes` of heap were (or are about to be) freed: a scrape body, a parsed
/// textfile, a push body. Thread-safe and cheap: it only adds.
void note_heap_freed(std::size_t bytes);

/// Asks for a trim at the next trim_heap_if_due, whatever was noted: a burst of work whose
/// scratch is not easily counted (many small blocks) is over.
void trim_heap_soon();

/// Once kHeapTrimAfterBytes were noted, returns the free pages of every arena to the kernel
/// (malloc_trim: a few ms on a large heap, so once per burst, never per input). glibc keeps
/// them otherwise, and RSS would stay at the high-water mark of one burst. The sampler
/// calls it after each sample.
void trim_heap_if_due();

}  // namespace loadwatch
