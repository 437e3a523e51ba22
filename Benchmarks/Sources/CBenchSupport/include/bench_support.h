#ifndef BENCH_SUPPORT_H
#define BENCH_SUPPORT_H
#include <stddef.h>
/// Bytes of heap currently allocated through malloc (glibc's mallinfo2().uordblks; 0 elsewhere).
size_t bench_heap_in_use(void);
/// Returns freed heap pages to the system (glibc's malloc_trim(0); nothing elsewhere).
void bench_trim_heap(void);
#endif
