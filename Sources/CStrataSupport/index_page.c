/*
 * index_page.c: the slot check of an index image page at open (IndexImage.swift).
 */
#include "strata_support.h"
#include <string.h>

int strata_index_page_scan(const void *slots, size_t capacity, uint64_t keys_start, uint64_t keys_end, size_t *used) {
    const unsigned char *p = (const unsigned char *)slots;
    size_t count = 0;
    for (size_t i = 0; i < capacity; i++, p += 32) {
        uint32_t tag;
        memcpy(&tag, p + 28, 4);
        if (tag == 0) continue;
        count++;
        uint64_t k1;
        memcpy(&k1, p + 8, 8);
        uint64_t top = k1 >> 56;
        if (top <= 15) continue;
        if (top != 0xFE || (k1 & 0x00FFFFFF00000000ull) != 0) return 0;
        uint64_t length = k1 & 0xFFFFFFFFull, k0;
        memcpy(&k0, p, 8);
        if (length <= 15 || k0 < keys_start || k0 > keys_end || length > keys_end - k0) return 0;
    }
    *used = count;
    return 1;
}
