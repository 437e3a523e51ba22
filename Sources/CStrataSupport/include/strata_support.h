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

/// A 32-bit check of `length` bytes made of CRC32Cs of three equal lanes (multiples of 8
/// bytes) and the tail, combined as `l0 ^ rotl(l1, 8) ^ rotl(l2, 16) ^ rotl(tail, 24)`:
/// the three lanes run as independent instruction chains, about three times the speed of
/// one CRC over the whole (the index image checks every page at open with it). A change
/// confined to one lane is detected as surely as by its CRC32C.
uint32_t strata_crc32c_lanes(const void *data, size_t length);

/// ``strata_crc32c_lanes`` computed by the portable path (tests check both agree).
uint32_t strata_crc32c_lanes_portable(const void *data, size_t length);

/// Checks the `capacity` 32-byte slots of an index image page (layout: docs/FORMAT.md,
/// "Index image"): every used slot (tag at bytes 28..<32 not 0) holds an inline key (top
/// byte of k1 at most 15) or a long key in the image (top byte 0xFE, bits 32..<56 zero, a
/// length over 15 and its bytes inside `[keys_start, keys_end)`). Returns 1 and the number
/// of used slots in `used`, or 0 at the first slot that is neither. In C: it runs over every
/// page when it is first touched, and this loop is ~1 ns a slot.
int strata_index_page_scan(const void *slots, size_t capacity, uint64_t keys_start, uint64_t keys_end, size_t *used);

/// Reads a byte with acquire ordering: what the thread that stored it with
/// ``strata_store_release_u8`` wrote before that store is visible after this load (each
/// page of an index image has such a state: checked, damaged, not yet checked).
static inline uint8_t strata_load_acquire_u8(const uint8_t *address) {
    return __atomic_load_n(address, __ATOMIC_ACQUIRE);
}

/// Stores a byte with release ordering (see ``strata_load_acquire_u8``).
static inline void strata_store_release_u8(uint8_t *address, uint8_t value) {
    __atomic_store_n(address, value, __ATOMIC_RELEASE);
}

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
