/*
 * The container's tokens: every kernel spends one token per thread block; out of tokens, it waits. Launches
 * (launch.c, legacy.c) and graph launches (graph.c) are charged here; the grant and the report are the control
 * block's (control.c).
 */
#define _GNU_SOURCE
#include <time.h>

#include "hook.h"

#define WAIT_STEP_NS 100000L
/* More blocks than any grid CUDA accepts (2^31 × 2^16 × 2^16 is 2^63, but no GPU finishes 2^50 blocks in a
 * month): refused, so that one charge can never wrap the cumulative blocks_launched counter. */
#define MAX_BLOCKS (1ull << 50)
/* While the agent is late the hook refills at its last rate, for at most this many periods (1 s at 5 ms):
 * a restarting agent neither freezes its tenants at once nor lets them run unthrottled; beyond that, launches
 * wait for the agent. Bounded so that an idle tenant cannot bank more than a second of its share. */
#define SELF_REFILL_PERIODS 200

/* What the grant allows now: the agent's cumulative grant, plus the parts of a paced refill due by now, plus
 * the refills it has missed since its latest heartbeat, at the rate of its latest grant. Only the slow path
 * asks, so the fast path never reads the clock. */
static uint64_t allowed_now(const dilu_grant_page *g, const dilu_grant_device *d) {
    uint64_t granted = __atomic_load_n(&d->tokens_granted, __ATOMIC_ACQUIRE);
    uint64_t heartbeat = __atomic_load_n(&g->heartbeat_ns, __ATOMIC_ACQUIRE);
    uint64_t period = (uint64_t)__atomic_load_n(&g->period_us, __ATOMIC_RELAXED) * 1000;
    uint64_t rate = __atomic_load_n(&d->tokens_per_period, __ATOMIC_RELAXED);
    uint64_t until = __atomic_load_n(&d->paced_until, __ATOMIC_RELAXED);
    uint64_t steps = __atomic_load_n(&d->pace_steps, __ATOMIC_RELAXED);
    uint64_t now = hook_now_ns();
    if (period == 0 || now < heartbeat) {
        return granted;
    }
    uint64_t elapsed = now - heartbeat;
    /* A paced period ends at paced_until; the pages are written field by field, so never below granted. */
    uint64_t end = steps > 1 && until > granted ? until : granted;
    if (elapsed < period) {
        if (end == granted || rate == 0 || rate > end) {
            return granted;
        }
        uint64_t part = elapsed * steps / period + 1; /* 1..steps: parts due, the first one at the heartbeat */
        uint64_t due = end - rate + (rate / steps) * part + (part == steps ? rate % steps : 0);
        return due > granted ? (due < end ? due : end) : granted;
    }
    uint64_t missed = elapsed / period - 1;
    missed = missed < SELF_REFILL_PERIODS ? missed : SELF_REFILL_PERIODS;
    uint64_t extra = rate != 0 && missed > (UINT64_MAX - end) / rate ? UINT64_MAX - end : missed * rate;
    return end + extra;
}

/* Slow path: sleep in short steps until what the grant allows covers what we launched. */
static CUresult wait_for_tokens(hook_control *c, int device, uint64_t launched) {
    const dilu_grant_device *d = &c->grant->device[device];
    struct timespec step = {.tv_sec = 0, .tv_nsec = WAIT_STEP_NS};
    while (allowed_now(c->grant, d) < launched && __atomic_load_n(&d->throttled, __ATOMIC_RELAXED) != 0) {
        nanosleep(&step, NULL);
    }
    return CUDA_SUCCESS;
}

CUresult hook_admit(uint64_t blocks, int *device) {
    hook_control *c = hook_control_get();
    if (c->refuse) {
        return CUDA_ERROR_NOT_PERMITTED;
    }
    if (blocks > MAX_BLOCKS) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    int d;
    CUresult rc = hook_device(c, &d);
    if (rc != CUDA_SUCCESS) {
        return rc;
    }
    *device = d;
    hook_klc_launch(d);
    uint64_t launched = __atomic_add_fetch(&c->report->device[d].blocks_launched, blocks, __ATOMIC_RELAXED);
    if (launched <= __atomic_load_n(&c->grant->device[d].tokens_granted, __ATOMIC_ACQUIRE)) {
        return CUDA_SUCCESS; /* the fast path: two atomics, no system call, no lock */
    }
    return wait_for_tokens(c, d, launched);
}
