/* Logging, to stderr, at a level from DILU_HOOK_LOG (off|error|warn|info|debug; default warn). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook.h"

static int level = LOG_WARN;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void read_level(void) {
    static const char *names[] = {"off", "error", "warn", "info", "debug"};
    const char *v = getenv("DILU_HOOK_LOG");
    if (v == NULL) {
        return;
    }
    for (int i = 0; i < 5; i++) {
        if (strcmp(v, names[i]) == 0) {
            level = i;
            return;
        }
    }
    fprintf(stderr, "dilu-hook: DILU_HOOK_LOG=%s is not allowed: must be one of off, error, warn, info, debug\n", v);
}

void hook_log(int at, const char *fmt, ...) {
    if (pthread_once(&once, read_level) != 0 || at > level) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    fputs("dilu-hook: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
