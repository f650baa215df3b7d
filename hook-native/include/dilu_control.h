/*
 * The control block shared between the hook (inside a GPU container) and the node agent.
 *
 * Two files per container, so that a tenant cannot raise its own share:
 *   - the grant page, written only by the agent and mounted read-only into the container (the hook refuses a
 *     grant page that is not a read-only mount of its own);
 *   - the report page, written by the hook (by every process of the container) and read by the agent, which
 *     treats everything in it as hostile.
 * Both are found at DILU_CONTROL_PATH inside the container, a path compiled into the hook, not one a tenant can
 * point elsewhere.
 * Both start with the same header (magic, version, size, kind) so either side refuses a block it does not
 * understand instead of misreading it. A layout change bumps DILU_CONTROL_VERSION. Every field is
 * fixed-width and naturally aligned; the Java agent reads them by the offsets checked in
 * tests/control_block_layout_test.c. Counters are updated with C11 atomics (the agent uses VarHandles).
 */
#ifndef DILU_CONTROL_H
#define DILU_CONTROL_H

#include <stdint.h>

#define DILU_CONTROL_MAGIC 0x44494c55u /* "DILU" */
#define DILU_CONTROL_VERSION 4u
#define DILU_MAX_DEVICES 8
#define DILU_KLC_RING 64
#define DILU_MAX_PROCESSES 32

#define DILU_KIND_GRANT 1u
#define DILU_KIND_REPORT 2u
#define DILU_KIND_CYCLE 3u

/* Where a container sees its control block: the device plugin mounts the two pages there. */
#ifndef DILU_CONTROL_PATH
#define DILU_CONTROL_PATH "/var/run/dilu/control"
#endif
#define DILU_GRANT_FILE "grant"
#define DILU_REPORT_FILE "report"
/* An SLO container's cycle page (read-write, beside its grant and report), and the directory of its SLO neighbours'
 * cycle pages on the same GPU (read-only): see dilu_cycle_page. */
#define DILU_CYCLE_FILE "cycle"
#define DILU_NEIGHBOURS_DIR "neighbours"
/* A page in the neighbours directory is named by its class, then anything (the agent uses the allocation's id):
 * an SLO container's cycles go before a best-effort one's; among one class, the one that began first goes first. */
#define DILU_NEIGHBOUR_SLO "slo-"
#define DILU_NEIGHBOUR_BE "be-"

typedef struct dilu_header {
    uint32_t magic;
    uint32_t version;
    uint32_t size; /* bytes of the whole page, header included */
    uint32_t kind; /* DILU_KIND_GRANT or DILU_KIND_REPORT */
} dilu_header;

/* Written by the agent. Grants are cumulative so the hook never loses a refill it did not see. */
typedef struct dilu_grant_device {
    uint64_t tokens_granted;     /* cumulative thread blocks the container may have launched */
    uint64_t memory_limit_bytes; /* device memory share of the whole container; allocations beyond it fail */
    uint32_t state;              /* controller state (0 NONE, 1 EMERGENCY, 2 RECOVERY, 3 CONTENTION) */
    uint32_t throttled;          /* 0: launches are not throttled on this device */
    uint64_t tokens_per_period;  /* the latest period's refill: the rate the hook keeps while the agent is late */
    /* Paced refills: tokens_granted is only the period's first part; the hook releases the rest itself, in
     * pace_steps equal parts from the heartbeat on, up to paced_until (so the agent wakes once a period). */
    uint64_t paced_until; /* the cumulative grant at the period's end; ≤ tokens_granted: not paced */
    uint32_t pace_steps;  /* parts of the period; ≤ 1: not paced */
    /* Yielding: before a kernel goes to the GPU, the hook waits while a neighbour's launch cycle that goes first is
     * in flight (their cycle pages: a higher class's, or an earlier one of its own class) and, beside a higher
     * class, while this container's earlier work on the kernel's stream still runs, at most yield_us in all; 0: no
     * waiting. Was reserved and always 0: older hooks do not yield, the layout is the same. */
    uint32_t yield_us;
} dilu_grant_device;

typedef struct dilu_grant_page {
    dilu_header header;
    uint64_t heartbeat_ns; /* CLOCK_MONOTONIC of the agent's latest refill */
    uint32_t devices;
    uint32_t period_us; /* the agent's token period */
    dilu_grant_device device[DILU_MAX_DEVICES];
} dilu_grant_page;

/* Written by the hook. */
typedef struct dilu_report_device {
    uint64_t blocks_launched;   /* cumulative, every process of the container */
    uint64_t memory_used_bytes; /* container total */
    uint64_t klc_count;         /* cumulative number of kernel launch cycles recorded */
    uint64_t memory_refusals;   /* cumulative: allocations refused for not fitting the device's memory share
                                 * (was reserved and always 0: older hooks report none, the layout is the same) */
    uint64_t klc_ns[DILU_KLC_RING]; /* klc_ns[(n - 1) % DILU_KLC_RING] is the n-th cycle */
} dilu_report_device;

typedef struct dilu_report_process {
    int32_t pid;    /* 0: free */
    int32_t sharer; /* a process sharing pid's address space (clone with CLONE_VM, vfork) that booked here; 0: none.
                     * The slot is reclaimed only once both are gone. Was reserved and always 0: the layout is the same */
    uint64_t memory_bytes[DILU_MAX_DEVICES]; /* reclaimed from the container total if the process dies */
} dilu_report_process;

typedef struct dilu_report_page {
    dilu_header header;
    uint32_t devices;
    uint32_t reserved;
    dilu_report_device device[DILU_MAX_DEVICES];
    dilu_report_process process[DILU_MAX_PROCESSES];
} dilu_report_page;

/*
 * One container's launch cycle in flight, for its neighbours on the same GPU: written by the container's hook
 * (DILU_CONTROL_PATH/DILU_CYCLE_FILE, read-write), read by theirs (DILU_CONTROL_PATH/DILU_NEIGHBOURS_DIR/<class><any
 * name>, read-only). The agent alone decides which pages are in a container's neighbours directory, and under which
 * class. A GPU dispatches thread blocks in launch order, so a neighbour's kernel that reaches it while a cycle is in
 * flight delays that cycle's next kernels by a whole kernel: launches wait for the cycles that go first to end
 * (dilu_grant_device.yield_us bounds the wait, and a cycle older than that bound is not waited for, so a page that is
 * never cleared holds nobody).
 */
typedef struct dilu_cycle_page {
    dilu_header header;
    uint64_t cycle_started_ns; /* CLOCK_MONOTONIC of the first launch of the cycle in flight; 0: none in flight */
} dilu_cycle_page;

#endif
