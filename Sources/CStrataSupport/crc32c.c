/*
 * crc32c.c: CRC32C (polynomial 0x82F63B78, reflected) for record and file checksums.
 *
 * The hardware path processes 8 bytes per instruction; the portable path uses the
 * classic slicing-by-8 tables built once on first use. Dispatch is decided once.
 */
#include "strata_support.h"
#include <string.h>
#include <pthread.h>

static uint32_t crc_tables[8][256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t crc = n;
        for (int k = 0; k < 8; k++) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        crc_tables[0][n] = crc;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t crc = crc_tables[0][n];
        for (int k = 1; k < 8; k++) {
            crc = crc_tables[0][crc & 0xFF] ^ (crc >> 8);
            crc_tables[k][n] = crc;
        }
    }
}

uint32_t strata_crc32c_portable(uint32_t crc, const void *data, size_t length) {
    pthread_once(&tables_once, build_tables);
    const unsigned char *p = (const unsigned char *)data;
    crc = ~crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        word = __builtin_bswap64(word);
#endif
        uint32_t lo = (uint32_t)word ^ crc, hi = (uint32_t)(word >> 32);
        crc = crc_tables[7][lo & 0xFF] ^ crc_tables[6][(lo >> 8) & 0xFF] ^
              crc_tables[5][(lo >> 16) & 0xFF] ^ crc_tables[4][lo >> 24] ^
              crc_tables[3][hi & 0xFF] ^ crc_tables[2][(hi >> 8) & 0xFF] ^
              crc_tables[1][(hi >> 16) & 0xFF] ^ crc_tables[0][hi >> 24];
        p += 8;
        length -= 8;
    }
    while (length--) crc = crc_tables[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>
__attribute__((target("sse4.2")))
static uint32_t crc32c_hardware(uint32_t crc, const void *data, size_t length) {
    const unsigned char *p = (const unsigned char *)data;
    uint64_t c = ~crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = _mm_crc32_u64(c, word);
        p += 8;
        length -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (length--) c32 = _mm_crc32_u8(c32, *p++);
    return ~c32;
}
static int hardware_available(void) { return __builtin_cpu_supports("sse4.2"); }
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
static uint32_t crc32c_hardware(uint32_t crc, const void *data, size_t length) {
    const unsigned char *p = (const unsigned char *)data;
    uint32_t c = ~crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __crc32cd(c, word);
        p += 8;
        length -= 8;
    }
    while (length--) c = __crc32cb(c, *p++);
    return ~c;
}
static int hardware_available(void) { return 1; }
#else
static uint32_t crc32c_hardware(uint32_t crc, const void *data, size_t length) {
    return strata_crc32c_portable(crc, data, length);
}
static int hardware_available(void) { return 0; }
#endif

static int use_hardware = -1;

int strata_crc32c_is_hardware(void) {
    int value = __atomic_load_n(&use_hardware, __ATOMIC_RELAXED);
    if (value < 0) {
        value = hardware_available() ? 1 : 0;
        __atomic_store_n(&use_hardware, value, __ATOMIC_RELAXED);
    }
    return value;
}

uint32_t strata_crc32c(uint32_t crc, const void *data, size_t length) {
    if (strata_crc32c_is_hardware()) return crc32c_hardware(crc, data, length);
    return strata_crc32c_portable(crc, data, length);
}

static uint32_t rotl32(uint32_t value, int bits) { return (value << bits) | (value >> (32 - bits)); }

static uint32_t combine_lanes(uint32_t a, uint32_t b, uint32_t c, uint32_t tail) {
    return a ^ rotl32(b, 8) ^ rotl32(c, 16) ^ rotl32(tail, 24);
}

uint32_t strata_crc32c_lanes_portable(const void *data, size_t length) {
    const unsigned char *p = (const unsigned char *)data;
    size_t lane = (length / 24) * 8;
    return combine_lanes(strata_crc32c_portable(0, p, lane), strata_crc32c_portable(0, p + lane, lane),
                         strata_crc32c_portable(0, p + 2 * lane, lane),
                         strata_crc32c_portable(0, p + 3 * lane, length - 3 * lane));
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_lanes_hardware(const void *data, size_t length) {
    const unsigned char *p = (const unsigned char *)data;
    size_t lane = (length / 24) * 8;
    const unsigned char *pa = p, *pb = p + lane, *pc = p + 2 * lane;
    uint64_t a = 0xFFFFFFFFu, b = 0xFFFFFFFFu, c = 0xFFFFFFFFu;
    for (size_t i = 0; i < lane; i += 8) {
        uint64_t wa, wb, wc;
        memcpy(&wa, pa + i, 8);
        memcpy(&wb, pb + i, 8);
        memcpy(&wc, pc + i, 8);
        a = _mm_crc32_u64(a, wa);
        b = _mm_crc32_u64(b, wb);
        c = _mm_crc32_u64(c, wc);
    }
    return combine_lanes(~(uint32_t)a, ~(uint32_t)b, ~(uint32_t)c, crc32c_hardware(0, p + 3 * lane, length - 3 * lane));
}
#else
static uint32_t crc32c_lanes_hardware(const void *data, size_t length) {
    const unsigned char *p = (const unsigned char *)data;
    size_t lane = (length / 24) * 8;
    return combine_lanes(crc32c_hardware(0, p, lane), crc32c_hardware(0, p + lane, lane),
                         crc32c_hardware(0, p + 2 * lane, lane), crc32c_hardware(0, p + 3 * lane, length - 3 * lane));
}
#endif

uint32_t strata_crc32c_lanes(const void *data, size_t length) {
    if (strata_crc32c_is_hardware()) return crc32c_lanes_hardware(data, length);
    return strata_crc32c_lanes_portable(data, length);
}
