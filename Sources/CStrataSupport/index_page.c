/*
 * index_page.c: the slot check of an index image page at open (IndexImage.swift).
 *
 * Two passes: a branch-free one over every slot that counts the used ones and notes whether
 * any holds a long key (about a third of the slots are empty, at random: a branch per slot
 * mispredicted often), and only for a page with long keys, the full check of each.
 */
#include "strata_support.h"
#include <string.h>

static int long_keys_in_bounds(const unsigned char *p, size_t capacity, uint64_t keys_start, uint64_t keys_end) {
    for (size_t i = 0; i < capacity; i++, p += 32) {
        uint32_t tag;
        uint64_t k0, k1;
        memcpy(&tag, p + 28, 4);
        memcpy(&k1, p + 8, 8);
        if (tag == 0 || (k1 >> 56) <= 15) continue;
        memcpy(&k0, p, 8);
        uint64_t length = k1 & 0xFFFFFFFFull;
        /* The 0xFE marker, bits 32..<56 clear, a length over 15, the bytes inside the keys. */
        if ((k1 >> 56) != 0xFE || (k1 & 0x00FFFFFF00000000ull) != 0 || length <= 15 ||
            k0 < keys_start || k0 > keys_end || length > keys_end - k0) return 0;
    }
    return 1;
}

int strata_index_page_scan(const void *slots, size_t capacity, uint64_t keys_start, uint64_t keys_end, size_t *used) {
    const unsigned char *p = (const unsigned char *)slots;
    size_t count = 0;
    uint64_t any_long = 0;
    for (size_t i = 0; i < capacity; i++) {
        uint32_t tag;
        uint64_t k1;
        memcpy(&tag, p + 32 * i + 28, 4);
        memcpy(&k1, p + 32 * i + 8, 8);
        uint64_t present = tag != 0;
        count += present;
        any_long |= present & ((k1 >> 56) > 15);
    }
    if (any_long && !long_keys_in_bounds(p, capacity, keys_start, keys_end)) return 0;
    *used = count;
    return 1;
}
