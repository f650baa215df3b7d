/*
 * infer's arrivals (arrivals.h). A file lets a harness give every way of a co-location the same requests, drawn by
 * its own distribution (the colocation bench's Gamma bursts); --rate draws a Poisson process here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrivals.h"
#include "stats.h"

typedef struct times {
    uint64_t *at;
    size_t n, cap;
} times;

static void add(times *t, uint64_t ns) {
    if (t->n == t->cap) {
        size_t cap = t->cap > 0 ? t->cap * 2 : 1024;
        uint64_t *grown = realloc(t->at, cap * sizeof(*grown));
        if (grown == NULL) {
            perror("dilu-gpu-check: arrivals");
            exit(1);
        }
        t->at = grown;
        t->cap = cap;
    }
    t->at[t->n++] = ns;
}

static void poisson(const args *a, times *t) {
    prng r = {.state = a->seed};
    for (double s = prng_exponential(&r, a->rate); s < a->seconds; s += prng_exponential(&r, a->rate)) {
        add(t, (uint64_t)(s * 1e9));
    }
}

static void refuse_line(const args *a, unsigned long line, const char *text, const char *why) {
    fprintf(stderr, "dilu-gpu-check: --arrivals %s: line %lu must be %s, got %.40s\n", a->arrivals, line, why, text);
    exit(2);
}

static void from_file(const args *a, times *t) {
    FILE *in = fopen(a->arrivals, "r");
    if (in == NULL) {
        fprintf(stderr, "dilu-gpu-check: --arrivals %s: %s\n", a->arrivals, strerror(errno));
        exit(2);
    }
    char text[128];
    double last = 0;
    unsigned long line = 0;
    while (fgets(text, sizeof(text), in) != NULL) {
        line++;
        text[strcspn(text, "\r\n")] = '\0';
        if (text[0] == '\0') {
            continue;
        }
        char *end = NULL;
        double s = strtod(text, &end);
        if (end == text || *end != '\0') {
            refuse_line(a, line, text, "a time in seconds");
        }
        if (!(s >= last && s < a->seconds)) { /* NaN fails too */
            char why[96];
            snprintf(why, sizeof(why), "a time in %g..%g s (ascending, before --seconds)", last, a->seconds);
            refuse_line(a, line, text, why);
        }
        if ((double)t->n >= ARGS_MAX_REQUESTS) {
            char why[96];
            snprintf(why, sizeof(why), "within the %.0f requests a run may have", ARGS_MAX_REQUESTS);
            refuse_line(a, line, text, why);
        }
        add(t, (uint64_t)(s * 1e9));
        last = s;
    }
    int failed = ferror(in);
    if (fclose(in) != 0 || failed) {
        fprintf(stderr, "dilu-gpu-check: --arrivals %s: could not be read\n", a->arrivals);
        exit(2);
    }
}

uint64_t *arrivals_of(const args *a, size_t *n) {
    times t = {0};
    if (a->arrivals != NULL) {
        from_file(a, &t);
    } else {
        poisson(a, &t);
    }
    *n = t.n;
    return t.at;
}
