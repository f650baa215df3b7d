/*
 * The control block shared between the hook (inside a GPU container) and the node agent.
 *
 * Two mappings per container, so that a tenant cannot raise its own share:
 *   - the grant page, written only by the agent and mapped read-only into the container;
 *   - the report page, written by the hook and read by the agent.
 * Both start with the same header (magic, version, size) so either side can refuse a block it
 * does not understand instead of misreading it. Layout changes bump DILU_CONTROL_VERSION.
 */
#ifndef DILU_CONTROL_H
#define DILU_CONTROL_H

#include <stdint.h>

#define DILU_CONTROL_MAGIC 0x44494c55u /* "DILU" */
#define DILU_CONTROL_VERSION 1u
#define DILU_MAX_DEVICES 8
#define DILU_KLC_RING 64

typedef struct dilu_header {
    uint32_t magic;
    uint32_t version;
    uint32_t size;   /* bytes of the whole page, header included */
    uint32_t kind;   /* 1 = grant page, 2 = report page */
} dilu_header;

/* Written by the agent. Grants are cumulative so the hook never loses a refill it did not see. */
typedef struct dilu_grant_device {
    uint64_t tokens_granted;     /* cumulative thread blocks the container may have launched */
    uint64_t memory_limit_bytes; /* device memory share of the whole container */
    uint32_t state;              /* controller state, for observability */
    uint32_t reserved;
} dilu_grant_device;

typedef struct dilu_grant_page {
    dilu_header header;
    uint64_t epoch;              /* bumped by the agent on every refill period */
    dilu_grant_device devices[DILU_MAX_DEVICES];
} dilu_grant_page;

/* Written by the hook. */
typedef struct dilu_report_device {
    uint64_t blocks_launched;    /* cumulative */
    uint64_t memory_used_bytes;  /* summed over every process of the container */
    uint64_t klc_count;          /* cumulative number of kernel launch cycles recorded */
    uint64_t klc_ns[DILU_KLC_RING]; /* ring of the latest launch cycle durations */
} dilu_report_device;

typedef struct dilu_report_page {
    dilu_header header;
    uint64_t last_launch_ns;     /* CLOCK_MONOTONIC of the latest launch, for idleness */
    dilu_report_device devices[DILU_MAX_DEVICES];
} dilu_report_page;

#endif
