/* Launch-order dispatch of equal thread blocks onto slots, a pure function of its inputs. */
#ifndef DILU_EMU_FIFO_H
#define DILU_EMU_FIFO_H

#include <stdint.h>

#include "shared.h"

typedef struct emu_placement {
    uint64_t start_ns;         /* the first block starts */
    uint64_t finish_ns;        /* the last block ends */
    uint64_t last_dispatch_ns; /* the last block starts */
} emu_placement;
emu_placement emu_fifo_place(uint64_t *slot_free_ns, uint32_t slots, uint32_t usable, uint64_t t0, uint64_t blocks,
                             uint64_t block_ns);

#endif
