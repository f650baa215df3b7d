/*
 * The hook's mutexes, taken and given back or the process ended: a lock that failed would leave the books it guards
 * open to a race that books memory twice or not at all, and the hook has nowhere to report that but the log.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hook.h"

void hook_lock(pthread_mutex_t *m, const char *what) {
    int rc = pthread_mutex_lock(m);
    if (rc != 0) {
        hook_log(LOG_ERROR, "%s failed: %s", what, strerror(rc));
        abort();
    }
}

void hook_unlock(pthread_mutex_t *m, const char *what) {
    int rc = pthread_mutex_unlock(m);
    if (rc != 0) {
        hook_log(LOG_ERROR, "%s failed: %s", what, strerror(rc));
        abort();
    }
}
