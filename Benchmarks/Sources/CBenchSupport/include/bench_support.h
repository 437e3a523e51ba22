#ifndef BENCH_SUPPORT_H
#define BENCH_SUPPORT_H
#include <stddef.h>
/// Bytes of heap currently allocated through malloc (glibc's mallinfo2().uordblks; 0 elsewhere).
size_t bench_heap_in_use(void);
#endif
