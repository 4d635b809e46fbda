#include "stepsim/support/heap.hpp"

#include <cstdint>
#include <cstdlib>
#include <initializer_list>

#if defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#endif

namespace stepsim::support {

namespace {

constexpr std::uintptr_t kHugePageBytes = std::uintptr_t{2} << 20;
// glibc's largest mmap threshold on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX, the value its dynamic
// threshold also stops at): larger blocks keep their own mapping and go back to the system at free.
constexpr int kMmapThresholdBytes = 32 << 20;
// glibc's own pad of each growth of the heap (DEFAULT_TOP_PAD).
constexpr int kGlibcTopPadBytes = 128 << 10;
// Larger than the free top of a fresh heap (glibc pads it by 128 KiB).
constexpr std::size_t kProbeBytes = std::size_t{1} << 20;
// mallopt takes an int.
constexpr std::size_t kMaxPadBytes = std::size_t{1} << 30;

// The blocks that grow the heap and fill it up to its first huge page; never freed.
void* volatile g_heap_probe = nullptr;
void* volatile g_heap_filler = nullptr;
// A block of n bytes (n a multiple of 16, at least 32) takes n + 16 bytes of glibc's heap, its
// header included; the top's own header follows it.
constexpr std::uintptr_t kChunkOverheadBytes = 32;

}  // namespace

HugePageHeap reserve_huge_page_heap(std::size_t pad_bytes) {
  HugePageHeap result;
#if defined(__GLIBC__)
  // Under a limit on address space or data, the reservation could take what a run needs.
  for (const int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    rlimit limit{};
    if (getrlimit(resource, &limit) != 0 || limit.rlim_cur != RLIM_INFINITY) return result;
  }
  if (pad_bytes > kMaxPadBytes) pad_bytes = kMaxPadBytes;
  if (mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes) == 0) return result;
  // The free top is handed back to the system only beyond the pad, so the region stays.
  if (mallopt(M_TRIM_THRESHOLD, static_cast<int>(pad_bytes)) == 0) return result;
  if (mallopt(M_TOP_PAD, static_cast<int>(pad_bytes)) == 0) return result;
  const auto before = reinterpret_cast<std::uintptr_t>(sbrk(0));
  // A block larger than the heap's free top makes the heap grow now, by itself and the pad. It is
  // kept (only its header is ever written): freeing it would write beyond it again.
  g_heap_probe = std::malloc(kProbeBytes);
  const auto after = reinterpret_cast<std::uintptr_t>(sbrk(0));
  // Later growth asks for no more than it needs, as glibc does by default, so that an allocation
  // never fails for want of room for a pad.
  static_cast<void>(mallopt(M_TOP_PAD, kGlibcTopPadBytes));
  if (g_heap_probe == nullptr || after <= before) return result;  // not glibc's heap (a sanitizer's allocator)
  result.heap_grown_bytes = after - before;
  // The heap's free top (its last mallinfo2().keepcost bytes) begins after the probe, with the
  // header that carving the probe wrote: a 2 MiB page that holds a written 4 KiB page stays
  // ordinary whatever the advice, so the advice begins at the next boundary.
  const std::uintptr_t top = after - mallinfo2().keepcost;
  const std::uintptr_t first = (top + 2 * kChunkOverheadBytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  const std::uintptr_t last = after & ~(kHugePageBytes - 1);
  if (last > first && madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE) == 0) {
    result.advised_begin = first;
    result.advised_bytes = last - first;
    // A block that is never freed (and never written) fills the top up to `first`, so that the
    // blocks of the run begin on the huge pages.
    g_heap_filler = std::malloc(first - top - kChunkOverheadBytes);
  }
#else
  (void)pad_bytes;
#endif
  return result;
}

}  // namespace stepsim::support
