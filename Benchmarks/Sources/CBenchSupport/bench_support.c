#include "bench_support.h"
#if defined(__linux__)
#include <malloc.h>
size_t bench_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}
#else
size_t bench_heap_in_use(void) { return 0; }
#endif

void bench_trim_heap(void) {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}
