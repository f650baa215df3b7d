/* request_stats.h: periods are closed lazily, by whichever event or read first comes after their end. */
#include "request_stats.h"

#include <pthread.h>

#include "workload.h"

#define PERIOD_NS 1000000000ull

static struct {
    pthread_mutex_t lock;
    uint64_t start;  /* CLOCK_MONOTONIC ns */
    uint64_t open;   /* the open period: [start + open s, start + open s + 1 s) */
    uint64_t since;  /* the latest change of in_flight in the open period, or its beginning */
    long in_flight;
    double arrived;  /* in the open period */
    double busy_ns;  /* in-flight requests times nanoseconds, over the open period so far */
    request_report last;
} stats = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void lock(void) {
    if (pthread_mutex_lock(&stats.lock) != 0) {
        abort();
    }
}

static void unlock(void) {
    if (pthread_mutex_unlock(&stats.lock) != 0) {
        abort();
    }
}

static int64_t unix_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
        perror("clock_gettime");
        exit(3);
    }
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Closes the open period if `now` is past it. Called with the lock held, with a `now` read under it, so that
 * time never goes backwards here whichever thread comes first. */
static void advance(uint64_t now) {
    uint64_t current = (now - stats.start) / PERIOD_NS;
    if (current == stats.open) {
        return;
    }
    uint64_t end = stats.start + (stats.open + 1) * PERIOD_NS;
    stats.busy_ns += (double)stats.in_flight * (double)(end - stats.since);
    if (current == stats.open + 1) {
        stats.last.requests = stats.arrived;
        stats.last.average_concurrency = stats.busy_ns / (double)PERIOD_NS;
    } else {
        /* Whole periods passed without an event: the last of them saw no arrival and a constant count in flight. */
        stats.last.requests = 0;
        stats.last.average_concurrency = (double)stats.in_flight;
    }
    uint64_t last_end = stats.start + current * PERIOD_NS;
    stats.last.uptime_s = (double)current;
    stats.last.unix_s = (unix_ns() - (int64_t)(now - last_end)) / 1000000000;
    stats.open = current;
    stats.since = last_end;
    stats.arrived = 0;
    stats.busy_ns = 0;
}

static void change(long in_flight, double arrived) {
    lock();
    uint64_t now = now_ns();
    advance(now);
    stats.busy_ns += (double)stats.in_flight * (double)(now - stats.since);
    stats.since = now;
    stats.in_flight += in_flight;
    stats.arrived += arrived;
    unlock();
}

void request_stats_start(void) {
    lock();
    stats.start = now_ns();
    stats.since = stats.start;
    unlock();
}

void request_stats_in(void) {
    change(1, 1);
}

void request_stats_out(void) {
    change(-1, 0);
}

request_report request_stats_report(void) {
    lock();
    advance(now_ns());
    request_report r = stats.last;
    unlock();
    return r;
}
