/*
 * How the kernels of every process share an emulated GPU (docs/emulated-gpu.md has the models and the
 * public facts behind them):
 *   fifo          thread blocks are dispatched in launch order as slots free up; computed once, when the
 *                 kernel reaches the GPU, in emulated time (fifo.c);
 *   timeslice     one process's kernels at a time, in slices, round robin over processes with work;
 *   proportional  SMs split in proportion to what the running kernels could use (the first model).
 * The last two progress in steps of wall-clock time, re-reading their share as neighbours come and go.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <time.h>

#include "dilu_emu.h"
#include "fifo.h"
#include "shared.h"
#include "sharing.h"

static void add(_Atomic uint64_t *counter, uint64_t n) {
    atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

static void count_both(int device, size_t offset, uint64_t n) {
    add((_Atomic uint64_t *)((char *)&emu_state()->dev[device].totals + offset), n);
    add((_Atomic uint64_t *)((char *)emu_own_counters(device) + offset), n);
}

#define COUNT(device, field, n) count_both((device), offsetof(emu_counters, field), (n))

void emu_count_kernel(int device, uint64_t blocks, uint64_t block_ns) {
    COUNT(device, kernels, 1);
    COUNT(device, blocks, blocks);
    COUNT(device, busy_slot_ns, blocks * block_ns);
    emu_count_own_blocks(device, blocks);
}

uint64_t emu_fifo_submit(int device, uint64_t ready_ns, uint64_t blocks, uint64_t block_ns) {
    emu_device *d = &emu_state()->dev[device];
    uint32_t usable = emu_mps_slots(device);
    int restricted = usable < d->slots;
    emu_lock_device(d);
    /* Blocks leave in launch order: none before the last block of the kernel ahead. A kernel held back by
     * its MPS limit does not hold back the kernels behind it, which can use the slots it may not. */
    uint64_t t0 = restricted || ready_ns > d->frontier_ns ? ready_ns : d->frontier_ns;
    emu_placement p = emu_fifo_place(d->slot_free_ns, d->slots, usable, t0, blocks, block_ns);
    if (!restricted && p.last_dispatch_ns > d->frontier_ns) {
        d->frontier_ns = p.last_dispatch_ns;
    }
    emu_unlock_device(d);
    return p.finish_ns;
}

static int alive(const emu_proc *p) {
    int32_t pid = atomic_load_explicit(&p->pid, memory_order_relaxed);
    return pid > 0 && !(kill(pid, 0) != 0 && errno == ESRCH);
}

static int wants(const emu_shared *s, int i, int device) {
    return atomic_load_explicit(&s->procs[i].demand[device], memory_order_relaxed) > 0 && alive(&s->procs[i]);
}

/*
 * Time slicing, under the device lock: the holder keeps the GPU for its slice; when the slice ends and
 * another process has work, or when the holder has none, the next process with work (round robin) gets a
 * slice. Returns whether `me` holds the GPU now, and when its slice ends.
 */
static int hold(emu_shared *s, emu_device *d, int device, int me, uint64_t now, uint64_t *until) {
    int holder = d->holder - 1;
    int holder_wants = holder >= 0 && wants(s, holder, device);
    int expired = now >= d->slice_end_ns;
    int next = -1;
    if (!holder_wants || expired) {
        for (int step = 1; step <= EMU_MAX_PROCS; step++) {
            int i = ((holder < 0 ? me - 1 : holder) + step + EMU_MAX_PROCS) % EMU_MAX_PROCS;
            if (i != holder && wants(s, i, device)) {
                next = i;
                break;
            }
        }
    }
    if (next >= 0) {
        d->holder = next + 1;
        d->slice_end_ns = now + s->timeslice_ns;
        add(&d->totals.slices, 1);
        if (next == me) {
            add(&emu_own_counters(device)->slices, 1);
        }
    } else if (holder_wants && expired) {
        d->slice_end_ns = now + s->timeslice_ns; /* nobody else waits: it keeps the GPU */
    }
    *until = d->slice_end_ns;
    return d->holder == me + 1;
}

/* SMs one running kernel of `demand` gets now under the progressive models (0: not running now). */
static double share_now(emu_shared *s, int device, int me, uint32_t demand, uint64_t now, uint64_t *until) {
    emu_device *d = &s->dev[device];
    uint32_t slots = d->slots;
    if (s->sharing == DILU_EMU_TIMESLICE) {
        emu_lock_device(d);
        int mine = hold(s, d, device, me, now, until);
        emu_unlock_device(d);
        uint32_t own = atomic_load_explicit(&s->procs[me].demand[device], memory_order_relaxed);
        /* While it holds the GPU the process's kernels share it among themselves. */
        return !mine ? 0 : own <= slots ? demand : (double)slots * demand / own;
    }
    *until = UINT64_MAX;
    uint64_t total = 0;
    for (int i = 0; i < EMU_MAX_PROCS; i++) {
        /* A process that died mid-kernel left its demand behind: it no longer shares the SMs. */
        if (wants(s, i, device)) {
            total += atomic_load_explicit(&s->procs[i].demand[device], memory_order_relaxed);
        }
    }
    return total <= slots ? demand : (double)slots * demand / (double)total;
}

/*
 * Runs one kernel under the timeslice or proportional model. It occupies d = min(blocks, usable slots)
 * slots and, alone, takes ceil(blocks / d) waves of one block time: that much slot time of work, done at
 * the rate of the slots it is given.
 */
uint64_t emu_run_progressive(int device, uint64_t blocks, uint64_t block_ns) {
    emu_shared *s = emu_state();
    int me = emu_self_index();
    uint32_t cap = s->sharing == DILU_EMU_PROPORTIONAL ? emu_mps_slots(device) : s->dev[device].slots;
    uint32_t demand = blocks < cap ? (uint32_t)blocks : cap;
    uint64_t waves = (blocks + demand - 1) / demand;
    double remaining = (double)waves * (double)demand * (double)block_ns;
    atomic_fetch_add(&s->procs[me].demand[device], demand);
    uint64_t now = emu_now_ns();
    while (remaining > 0.5) {
        uint64_t until;
        double share = share_now(s, device, me, demand, now, &until);
        uint64_t step = EMU_STEP_NS;
        if (share > 0) {
            uint64_t finish = (uint64_t)(remaining / share + 0.5);
            step = finish < step ? finish : step;
        }
        if (until != UINT64_MAX && until > now && until - now < step) {
            step = until - now;
        }
        emu_sleep_until(now + (step == 0 ? 1 : step));
        uint64_t after = emu_now_ns();
        /* A late wake-up is not credited past the end of the slice it was given. */
        uint64_t end = after < until ? after : until;
        uint64_t credited = end > now ? end - now : 0;
        double done = share * (double)credited < remaining ? share * (double)credited : remaining;
        remaining -= done;
        /* Time at the share given, not the host's oversleep past the kernel's end: a loaded machine must not
         * make the average share look smaller than it was. */
        COUNT(device, kernel_ns, share > 0 ? (uint64_t)(done / share + 0.5) : after - now);
        COUNT(device, share_sm_ns, (uint64_t)(done + 0.5));
        if (share > 0) {
            COUNT(device, held_ns, credited);
        }
        now = after;
    }
    atomic_fetch_sub(&s->procs[me].demand[device], demand);
    return now;
}

static CUresult copy_stats(CUdevice dev, const emu_counters *c, dilu_emu_stats *out) {
    emu_shared *s = emu_state();
    if (s == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (out == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *out = (dilu_emu_stats){
        .sharing = s->sharing,
        .slots = s->dev[dev].slots,
        .kernels = atomic_load(&c->kernels),
        .blocks = atomic_load(&c->blocks),
        .busy_slot_ns = atomic_load(&c->busy_slot_ns),
        .held_ns = atomic_load(&c->held_ns),
        .slices = atomic_load(&c->slices),
        .share_sm_ns = atomic_load(&c->share_sm_ns),
        .kernel_ns = atomic_load(&c->kernel_ns),
    };
    return CUDA_SUCCESS;
}

static int valid_device(CUdevice dev) {
    emu_shared *s = emu_state();
    return s != NULL && dev >= 0 && (uint32_t)dev < s->devices;
}

__attribute__((visibility("default"))) CUresult diluEmuDeviceStats(CUdevice dev, dilu_emu_stats *out) {
    return !valid_device(dev) ? CUDA_ERROR_INVALID_DEVICE : copy_stats(dev, &emu_state()->dev[dev].totals, out);
}

__attribute__((visibility("default"))) CUresult diluEmuProcessStats(CUdevice dev, dilu_emu_stats *out) {
    return !valid_device(dev) ? CUDA_ERROR_INVALID_DEVICE : copy_stats(dev, emu_own_counters(dev), out);
}
