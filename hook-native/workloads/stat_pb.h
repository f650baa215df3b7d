/*
 * Knative's autoscaler Stat message (autoscaler/src/main/proto/knative_stat.proto), encoded by hand: the
 * wire format is a handful of rules, not worth a protobuf runtime in the workload image.
 */
#ifndef DILU_STAT_PB_H
#define DILU_STAT_PB_H

#include <stddef.h>
#include <stdint.h>

typedef struct knative_stat {
    const char *pod_name; /* field 1, string */
    double average_concurrent_requests;         /* 2 */
    double average_proxied_concurrent_requests; /* 3 */
    double request_count;                       /* 4 */
    double proxied_request_count;               /* 5 */
    double process_uptime;                      /* 6 */
    int64_t timestamp;                          /* 7, int64 */
} knative_stat;

/* Writes every field, defaults included, into out; returns the length, or 0 when cap is too small. */
size_t stat_pb_encode(const knative_stat *stat, uint8_t *out, size_t cap);

#endif
