#pragma once
// The process heap on transparent huge pages. A step graph, its op times and its memory events
// are arrays of a few megabytes that each run writes once; on 4 KiB pages every first write is a
// page fault, and on virtual machines a fault costs about as much as simulating a hundred ops. So
// the command line and the sweep's workers (which inherit it through fork) grow glibc's heap by
// one padded region at start-up, ask the kernel for huge pages there (madvise MADV_HUGEPAGE; it
// takes effect where /sys/kernel/mm/transparent_hugepage/enabled says "madvise" or "always"), and
// serve blocks of up to 32 MiB from that heap instead of giving each its own mapping.

#include <cstddef>
#include <cstdint>

namespace stepsim::support {

struct HugePageHeap {
  std::size_t heap_grown_bytes = 0;  // by how much the heap grew at the reservation
  std::uintptr_t advised_begin = 0;  // where the pages advised to be huge begin (2 MiB aligned)
  std::size_t advised_bytes = 0;     // how many bytes of whole 2 MiB pages were advised
};

// The pad of the command line and its sweep workers: room for the graph, times and memory events
// of a run of a few hundred thousand ops, or the blocks of a sweep worker, before the heap grows
// again (on ordinary pages). It is address space: only the pages written take memory.
inline constexpr std::size_t kDefaultHeapPadBytes = std::size_t{256} << 20;

// Grows glibc's heap by `pad_bytes` (at most 1 GiB) beyond what is in use, keeps that region
// (the heap's top goes back to the system only beyond it), serves blocks below 32 MiB from the
// heap and advises the region's whole 2 MiB pages to be huge. Later growth is glibc's usual. It
// does nothing, and returns zeros, under a limit on address space or data (ulimit -v, -d), with
// another allocator than glibc's (a sanitizer's), or where the heap cannot grow; `advised_bytes`
// is 0 without transparent huge pages. Call it once, first thing in main.
HugePageHeap reserve_huge_page_heap(std::size_t pad_bytes);

}  // namespace stepsim::support
