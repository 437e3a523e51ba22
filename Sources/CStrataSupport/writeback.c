/*
 * writeback.c: asks the kernel to start writing a file range to disk without waiting
 * (Linux sync_file_range with SYNC_FILE_RANGE_WRITE). Large transactions use it so the
 * disk works while the transaction is still being built. A hint only: it promises no
 * durability, and on other systems it does nothing.
 */
#define _GNU_SOURCE
#include "strata_support.h"
#if defined(__linux__)
#include <fcntl.h>
#endif

int strata_start_writeback(int fd, long long offset, long long length) {
#if defined(__linux__)
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd; (void)offset; (void)length;
    return 0;
#endif
}
