/* Launch-order dispatch (src/emu/fifo.c) on its own: worked examples, and agreement with a block-by-block
 * dispatcher on random cases. No processes, no clock. */
#include <stdlib.h>
#include <string.h>

#include "../src/emu/fifo.h"
#include "expect.h"

/* The definition: each block, in order, goes to the slot that frees first (lowest index on a tie), no
 * earlier than t0 and no earlier than the block before it. */
static emu_placement by_block(uint64_t *free_ns, uint32_t slots, uint32_t usable, uint64_t t0, uint64_t blocks,
                              uint64_t d) {
    uint32_t use[EMU_MAX_SLOTS];
    uint32_t m = 0;
    int taken[EMU_MAX_SLOTS] = {0};
    uint32_t limit = usable >= 1 && usable < slots ? usable : slots;
    while (m < limit) { /* the `limit` slots free first, ties by index */
        uint32_t best = 0;
        int found = 0;
        for (uint32_t i = 0; i < slots; i++) {
            if (!taken[i] && (!found || free_ns[i] < free_ns[best])) {
                best = i;
                found = 1;
            }
        }
        taken[best] = 1;
        use[m++] = best;
    }
    emu_placement p = {.start_ns = UINT64_MAX, .finish_ns = 0, .last_dispatch_ns = 0};
    uint64_t previous = t0;
    for (uint64_t b = 0; b < blocks; b++) {
        uint32_t best = use[0];
        for (uint32_t j = 1; j < m; j++) {
            uint64_t a = free_ns[use[j]] > previous ? free_ns[use[j]] : previous;
            uint64_t c = free_ns[best] > previous ? free_ns[best] : previous;
            if (a < c) {
                best = use[j];
            }
        }
        uint64_t start = free_ns[best] > previous ? free_ns[best] : previous;
        free_ns[best] = start + d;
        previous = start;
        p.start_ns = start < p.start_ns ? start : p.start_ns;
        p.finish_ns = start + d > p.finish_ns ? start + d : p.finish_ns;
        p.last_dispatch_ns = start;
    }
    return p;
}

static void expect_placement(emu_placement p, uint64_t start, uint64_t finish, uint64_t last, const char *what) {
    EXPECT(p.start_ns == start && p.finish_ns == finish && p.last_dispatch_ns == last,
           "%s: start %llu finish %llu last %llu, expected %llu %llu %llu", what, (unsigned long long)p.start_ns,
           (unsigned long long)p.finish_ns, (unsigned long long)p.last_dispatch_ns, (unsigned long long)start,
           (unsigned long long)finish, (unsigned long long)last);
}

static void worked_examples(void) {
    uint64_t f[4] = {0, 0, 0, 0};
    expect_placement(emu_fifo_place(f, 4, 4, 0, 8, 10), 0, 20, 10, "8 blocks on 4 idle slots: two waves");
    expect_placement(emu_fifo_place(f, 4, 4, 10, 1, 5), 20, 25, 20, "a short kernel waits for a free slot");

    uint64_t g[4] = {0, 0, 0, 0};
    expect_placement(emu_fifo_place(g, 4, 4, 0, 6, 10), 0, 20, 10, "6 blocks: a partial second wave");
    expect_placement(emu_fifo_place(g, 4, 4, 10, 2, 1), 10, 11, 10, "the next kernel takes the leftover slots");

    uint64_t h[4] = {0, 0, 100, 100};
    expect_placement(emu_fifo_place(h, 4, 4, 0, 5, 30), 0, 90, 60, "busy slots are skipped while others free up");
    EXPECT(h[0] == 90 && h[1] == 60 && h[2] == 100 && h[3] == 100, "slot times %llu %llu %llu %llu",
           (unsigned long long)h[0], (unsigned long long)h[1], (unsigned long long)h[2], (unsigned long long)h[3]);

    uint64_t r[4] = {50, 0, 10, 0};
    expect_placement(emu_fifo_place(r, 4, 2, 0, 4, 10), 0, 20, 10, "restricted to the two slots free first");
    EXPECT(r[0] == 50 && r[2] == 10, "slots outside the restriction untouched: %llu %llu", (unsigned long long)r[0],
           (unsigned long long)r[2]);

    static uint64_t big[EMU_MAX_SLOTS];
    memset(big, 0, sizeof(big));
    /* 10^9 blocks on 108 slots: ceil(10^9 / 108) = 9,259,260 waves, found without visiting each block. */
    expect_placement(emu_fifo_place(big, 108, 108, 0, 1000000000ull, 1), 0, 9259260, 9259259, "a huge grid");
}

static int ascending(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void agrees_with_block_by_block(void) {
    unsigned seed = 7;
    for (int n = 0; n < 20000; n++) {
        uint32_t slots = 1 + (uint32_t)(rand_r(&seed) % 12);
        uint32_t usable = 1 + (uint32_t)(rand_r(&seed) % (slots + 2));
        uint64_t fast[EMU_MAX_SLOTS], slow[EMU_MAX_SLOTS];
        for (uint32_t i = 0; i < slots; i++) {
            fast[i] = slow[i] = (uint64_t)(rand_r(&seed) % 50);
        }
        uint64_t t0 = (uint64_t)(rand_r(&seed) % 40);
        uint64_t blocks = 1 + (uint64_t)(rand_r(&seed) % 40);
        uint64_t d = 1 + (uint64_t)(rand_r(&seed) % 9);
        emu_placement a = emu_fifo_place(fast, slots, usable, t0, blocks, d);
        emu_placement b = by_block(slow, slots, usable, t0, blocks, d);
        int same = a.start_ns == b.start_ns && a.finish_ns == b.finish_ns && a.last_dispatch_ns == b.last_dispatch_ns;
        /* Which of two slots free by t0 takes a block may differ; the slot times from t0 on, as a set, may not. */
        for (uint32_t i = 0; i < slots; i++) {
            fast[i] = fast[i] > t0 ? fast[i] : t0;
            slow[i] = slow[i] > t0 ? slow[i] : t0;
        }
        qsort(fast, slots, sizeof(fast[0]), ascending);
        qsort(slow, slots, sizeof(slow[0]), ascending);
        int same_slots = memcmp(fast, slow, sizeof(fast[0]) * slots) == 0;
        if (!same || !same_slots) {
            EXPECT(0, "case %d (slots %u usable %u t0 %llu blocks %llu d %llu): fast %llu/%llu/%llu, by block "
                      "%llu/%llu/%llu", n, slots, usable, (unsigned long long)t0, (unsigned long long)blocks,
                   (unsigned long long)d, (unsigned long long)a.start_ns, (unsigned long long)a.finish_ns,
                   (unsigned long long)a.last_dispatch_ns, (unsigned long long)b.start_ns,
                   (unsigned long long)b.finish_ns, (unsigned long long)b.last_dispatch_ns);
            return;
        }
    }
}

int main(void) {
    worked_examples();
    agrees_with_block_by_block();
    printf("fifo dispatch: %s\n", failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
