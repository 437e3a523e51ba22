/*
 * strata_support.h: the few routines the Strata engine wants from C.
 *
 * CRC32C (Castagnoli) guards every record, hint file and marker that Strata writes.
 * It runs on every read and write, so it uses the CPU's crc32 instruction where the
 * processor has one (SSE4.2 on x86-64, the CRC extension on AArch64) and a
 * slicing-by-8 table otherwise. Both give identical results.
 */
#ifndef STRATA_SUPPORT_H
#define STRATA_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Extends `crc` (start with 0) over `length` bytes at `data`; returns the new CRC32C.
uint32_t strata_crc32c(uint32_t crc, const void *data, size_t length);

/// 1 when the hardware path is in use, 0 for the table path (reported by stats and tests).
int strata_crc32c_is_hardware(void);

/// The portable path, exposed so tests can check both paths agree.
uint32_t strata_crc32c_portable(uint32_t crc, const void *data, size_t length);

/// Asks the CPU to start loading the cache lines at `address` (and the next) for a read
/// soon: a scan that visits records in hash order issues these a few records ahead, so the
/// misses overlap instead of following one another. A hint only; never faults.
static inline void strata_prefetch(const void *address) {
    __builtin_prefetch(address, 0, 3);
    __builtin_prefetch((const char *)address + 64, 0, 3);
}

/// Starts asynchronous writeback of a file range (Linux); returns 0 or -1 with errno. A hint only.
int strata_start_writeback(int fd, long long offset, long long length);

#ifdef __cplusplus
}
#endif

#endif
