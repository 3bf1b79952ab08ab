#include "sim/heap_policy.hpp"

#include <cstdlib>  // defines __GLIBC__ on glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace trainsim::sim {

void keep_freed_heap_memory() {
#if defined(__GLIBC__)
  // A setting glibc refuses (or a sanitizer's allocator ignores) leaves its default: only
  // speed depends on it.
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
}

}  // namespace trainsim::sim
