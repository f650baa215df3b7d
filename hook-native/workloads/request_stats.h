/*
 * The requests a server saw, in Knative queue-proxy's terms: reporting periods of one second from the
 * start, and of each the requests that arrived in it and the time-weighted average of those in flight.
 * Only the last complete period is reported, as queue-proxy does, so every period is read the same
 * however often and whenever it is read.
 */
#ifndef DILU_REQUEST_STATS_H
#define DILU_REQUEST_STATS_H

#include <stdint.h>

/* The last complete period; all zero until the first has ended. */
typedef struct request_report {
    double requests;            /* that arrived during the period (per second, since it lasts 1 s) */
    double average_concurrency; /* in flight, averaged over the period's time */
    double uptime_s;            /* at the period's end: the seconds from the start, a whole number */
    int64_t unix_s;             /* the period's end, in seconds since the epoch */
} request_report;

/* The start: the first period begins now. Call once, before the others. */
void request_stats_start(void);

/* A request arrived. */
void request_stats_in(void);

/* A request that arrived is done. */
void request_stats_out(void);

request_report request_stats_report(void);

#endif
