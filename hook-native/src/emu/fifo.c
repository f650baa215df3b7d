/*
 * Launch-order dispatch of one kernel's thread blocks onto the GPU's slots (an SM holds `blocks per SM`
 * slots). Blocks are dispatched one after another, each to the slot that frees first; all blocks of a
 * kernel take the same time. A pure function of the slots' free times, so it is computed once, when the
 * kernel reaches the GPU, and tested on its own.
 *
 * With equal block times, slot i (free at f_i) runs blocks starting at f_i, f_i + d, f_i + 2d, …; the
 * kernel's B blocks are the B earliest of all those start times. So instead of dispatching block by block
 * (a kernel may have millions), find the smallest T with at least B start times ≤ T by bisection; every
 * slot then runs the blocks it has before T, and ties at T go to the lowest slots.
 */
#include <stdlib.h>

#include "fifo.h"

static uint64_t max_u64(uint64_t a, uint64_t b) {
    return a > b ? a : b;
}

/* Blocks slot i starts at or before t, given it is free from f (saturating at cap). */
static uint64_t starts_by(uint64_t f, uint64_t t, uint64_t d, uint64_t cap) {
    if (f > t) {
        return 0;
    }
    uint64_t n = (t - f) / d + 1;
    return n < cap ? n : cap;
}

static uint64_t count_by(const uint64_t *f, uint32_t m, uint64_t t, uint64_t d, uint64_t cap) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < m && n < cap; i++) {
        n += starts_by(f[i], t, d, cap - n);
    }
    return n;
}

static _Thread_local const uint64_t *sort_base;

static int by_free_time(const void *a, const void *b) {
    uint64_t x = sort_base[*(const uint16_t *)a], y = sort_base[*(const uint16_t *)b];
    return (x > y) - (x < y);
}

/*
 * Places `blocks` blocks of `block_ns` each, none starting before t0, onto `slots` slots whose free times
 * are slot_free_ns (updated). `usable` < slots restricts the kernel to that many slots, the ones free
 * first (an MPS client's active-thread limit). blocks ≥ 1, block_ns ≥ 1, blocks × block_ns < 2^62.
 */
emu_placement emu_fifo_place(uint64_t *slot_free_ns, uint32_t slots, uint32_t usable, uint64_t t0, uint64_t blocks,
                             uint64_t block_ns) {
    static _Thread_local uint16_t index[EMU_MAX_SLOTS];
    static _Thread_local uint64_t f[EMU_MAX_SLOTS];
    uint32_t m = usable >= 1 && usable < slots ? usable : slots;
    for (uint32_t i = 0; i < slots; i++) {
        index[i] = (uint16_t)i;
    }
    if (m < slots) {
        sort_base = slot_free_ns;
        qsort(index, slots, sizeof(index[0]), by_free_time);
    }
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < m; i++) {
        f[i] = max_u64(slot_free_ns[index[i]], t0);
        lo = f[i] < lo ? f[i] : lo;
        hi = max_u64(hi, f[i]);
    }
    /* By hi, every slot has started ceil(B/m) blocks: at least B in all. */
    hi += ((blocks + m - 1) / m - 1) * block_ns;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (count_by(f, m, mid, block_ns, blocks) >= blocks) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    uint64_t last = lo; /* the last block starts here */
    uint64_t before = last > 0 ? count_by(f, m, last - 1, block_ns, blocks) : 0;
    uint64_t ties = blocks - before;
    emu_placement p = {.start_ns = UINT64_MAX, .finish_ns = 0, .last_dispatch_ns = last};
    for (uint32_t i = 0; i < m; i++) {
        uint64_t k = last > 0 ? starts_by(f[i], last - 1, block_ns, blocks) : 0;
        if (ties > 0 && f[i] <= last && (last - f[i]) % block_ns == 0) {
            k++;
            ties--;
        }
        if (k > 0) {
            uint64_t end = f[i] + k * block_ns;
            slot_free_ns[index[i]] = end;
            p.start_ns = f[i] < p.start_ns ? f[i] : p.start_ns;
            p.finish_ns = max_u64(p.finish_ns, end);
        }
    }
    return p;
}
