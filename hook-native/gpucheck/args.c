/*
 * Command-line parsing: strict, numbers whole (strtoull / strtod to their end), each option allowed only in the
 * modes that read it, errors of the form "--<name> must be <range>, got <value>" and exit status 2.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

#define BIT(m) (1u << (m))
#define TIMED (BIT(MODE_LOAD) | BIT(MODE_INFER) | BIT(MODE_TRAIN))
#define ITERS (BIT(MODE_PROBE) | TIMED)
#define SHAPED (BIT(MODE_INFER) | BIT(MODE_TRAIN))

typedef enum kind { INTEGER, NUMBER, TEXT } kind;

typedef struct option {
    const char *name;
    unsigned int modes;   /* BIT(mode) of the modes that take it */
    unsigned int required; /* BIT(mode) of the modes that need it */
    kind kind;
    double min, max; /* integers are checked exactly against these, which hold them exactly (< 2^53) ... */
    uint64_t max_integer; /* ... except --seed, whose range is all of uint64_t */
} option;

enum { O_ITERS, O_LAUNCHES, O_ALLOC_LIMIT, O_ALLOC_CHUNK, O_SECONDS, O_BLOCKS, O_KERNELS, O_RATE, O_ARRIVALS,
       O_BATCH_MAX, O_MAX_WAIT, O_SEED, O_GAP_MS, O_BLOCK_US, O_PERIOD_MS, O_COUNT };

static const option options[O_COUNT] = {
    [O_ITERS] = {"iters", ITERS, ITERS, INTEGER, 1, 4294967295.0, 4294967295u},
    [O_LAUNCHES] = {"launches", BIT(MODE_PROBE) | BIT(MODE_LAUNCH), 0, INTEGER, 1, 1e8, 100000000u},
    [O_ALLOC_LIMIT] = {"alloc-limit-mib", BIT(MODE_PROBE), 0, INTEGER, 0, 1048576, 1048576u},
    [O_ALLOC_CHUNK] = {"alloc-chunk-mib", BIT(MODE_PROBE), 0, INTEGER, 1, 1048576, 1048576u},
    [O_SECONDS] = {"seconds", TIMED, TIMED, NUMBER, 0.001, 86400, 0},
    [O_BLOCKS] = {"blocks", TIMED, 0, INTEGER, 1, 2147483647.0, 2147483647u},
    [O_KERNELS] = {"kernels", SHAPED, 0, INTEGER, 1, 10000, 10000u},
    /* infer takes one of --rate and --arrivals (checked after parsing). */
    [O_RATE] = {"rate", BIT(MODE_INFER), 0, NUMBER, 0.001, 1e6, 0},
    [O_ARRIVALS] = {"arrivals", BIT(MODE_INFER), 0, TEXT, 0, 0, 0},
    [O_BATCH_MAX] = {"batch-max", BIT(MODE_INFER), 0, INTEGER, 1, 4096, 4096u},
    [O_MAX_WAIT] = {"max-wait-ms", BIT(MODE_INFER), 0, NUMBER, 0, 1e5, 0},
    [O_SEED] = {"seed", BIT(MODE_INFER), 0, INTEGER, 0, 0, UINT64_MAX},
    [O_GAP_MS] = {"gap-ms", BIT(MODE_TRAIN), 0, NUMBER, 0, 1e6, 0},
    [O_BLOCK_US] = {"block-us", SHAPED, 0, NUMBER, 0.001, 1e7, 0},
    [O_PERIOD_MS] = {"period-ms", SHAPED, 0, NUMBER, 0.001, 1e6, 0},
};

static const char *const mode_names[] = {"info", "calibrate", "probe", "launch", "load", "infer", "train"};

static void usage(void) {
    fprintf(stderr,
            "usage: dilu-gpu-check info\n"
            "       dilu-gpu-check calibrate\n"
            "       dilu-gpu-check probe --iters N [--launches L] [--alloc-limit-mib M] [--alloc-chunk-mib C]\n"
            "       dilu-gpu-check launch [--launches L]\n"
            "       dilu-gpu-check load --iters N --seconds S [--blocks B]\n"
            "       dilu-gpu-check infer --iters N --seconds S (--rate R [--seed 1] | --arrivals FILE) [--batch-max 8] "
            "[--max-wait-ms 0] [--kernels 4] [--blocks B] [--block-us U] [--period-ms P]\n"
            "       dilu-gpu-check train --iters N --seconds S [--kernels 8] [--blocks B] [--gap-ms 3] [--block-us U] "
            "[--period-ms P]\n");
    exit(2);
}

static void range(const option *o, char *out, size_t len) {
    if (o->kind == TEXT) {
        snprintf(out, len, "a path");
    } else if (o->kind == INTEGER) {
        snprintf(out, len, "an integer in %.0f..%llu", o->min, (unsigned long long)o->max_integer);
    } else {
        snprintf(out, len, "a number in %.15g..%.15g", o->min, o->max);
    }
}

static void refuse(const option *o, const char *got) {
    char r[64];
    range(o, r, sizeof(r));
    fprintf(stderr, "dilu-gpu-check: --%s must be %s, got %s\n", o->name, r, got);
    exit(2);
}

/* Digits only (no sign, no blanks, which strtoull would take), all of them, in range. */
static uint64_t integer(const option *o, const char *text) {
    if (!isdigit((unsigned char)text[0])) {
        refuse(o, text);
    }
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end != '\0' || errno != 0 || (double)v < o->min || v > o->max_integer) {
        refuse(o, text);
    }
    return v;
}

static double number(const option *o, const char *text) {
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || !(v >= o->min && v <= o->max)) { /* NaN fails too */
        refuse(o, text);
    }
    return v;
}

static void store(args *a, int which, const char *text) {
    const option *o = &options[which];
    switch (which) {
    case O_ITERS: a->iters = (unsigned int)integer(o, text); break;
    case O_LAUNCHES: a->launches = (unsigned long)integer(o, text); break;
    case O_ALLOC_LIMIT: a->alloc_limit_mib = (unsigned long)integer(o, text); break;
    case O_ALLOC_CHUNK: a->alloc_chunk_mib = (unsigned long)integer(o, text); break;
    case O_SECONDS: a->seconds = number(o, text); break;
    case O_BLOCKS: a->blocks = (unsigned int)integer(o, text); break;
    case O_KERNELS: a->kernels = (unsigned int)integer(o, text); break;
    case O_RATE: a->rate = number(o, text); break;
    case O_ARRIVALS:
        if (text[0] == '\0') {
            refuse(o, "an empty path");
        }
        a->arrivals = text;
        break;
    case O_BATCH_MAX: a->batch_max = (unsigned int)integer(o, text); break;
    case O_MAX_WAIT: a->max_wait_ms = number(o, text); break;
    case O_SEED: a->seed = integer(o, text); break;
    case O_GAP_MS: a->gap_ms = number(o, text); break;
    case O_BLOCK_US: a->block_us = number(o, text); break;
    case O_PERIOD_MS: a->period_ms = number(o, text); break;
    default: usage();
    }
}

static int find(const char *name, size_t len) {
    for (int i = 0; i < O_COUNT; i++) {
        if (strlen(options[i].name) == len && strncmp(options[i].name, name, len) == 0) {
            return i;
        }
    }
    return -1;
}

void args_parse(int argc, char **argv, args *a) {
    *a = (args){.launches = 20000, .alloc_chunk_mib = 64, .batch_max = 8, .seed = 1, .gap_ms = 3};
    if (argc < 2) {
        usage();
    }
    int m = -1;
    for (int i = 0; i < (int)(sizeof(mode_names) / sizeof(mode_names[0])); i++) {
        if (strcmp(argv[1], mode_names[i]) == 0) {
            m = i;
        }
    }
    if (m < 0) {
        fprintf(stderr, "dilu-gpu-check: the mode must be info, calibrate, probe, launch, load, infer or train, got %s\n",
                argv[1]);
        usage();
    }
    a->mode = (mode)m;
    unsigned int given = 0;
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0) {
            fprintf(stderr, "dilu-gpu-check: options must be --name value, got %s\n", arg);
            usage();
        }
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
        int which = find(name, len);
        if (which < 0 || (options[which].modes & BIT(m)) == 0) {
            fprintf(stderr, "dilu-gpu-check: %.*s is not an option of %s\n", (int)(len + 2), arg, mode_names[m]);
            usage();
        }
        const char *value = eq != NULL ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (value == NULL) {
            refuse(&options[which], "nothing");
        }
        store(a, which, value);
        given |= 1u << which;
    }
    for (int i = 0; i < O_COUNT; i++) {
        if ((options[i].required & BIT(m)) != 0 && (given & (1u << i)) == 0) {
            refuse(&options[i], "nothing");
        }
    }
    int rate = (given & (1u << O_RATE)) != 0, file = (given & (1u << O_ARRIVALS)) != 0;
    if (m == MODE_INFER && rate == file) {
        fprintf(stderr, "dilu-gpu-check: infer takes one of --rate R and --arrivals FILE, got %s\n",
                rate ? "both" : "neither");
        exit(2);
    }
    if (m == MODE_INFER && (given & (1u << O_SEED)) != 0 && file) {
        fprintf(stderr, "dilu-gpu-check: --seed seeds --rate's arrivals: it is not an option with --arrivals\n");
        exit(2);
    }
    if (m == MODE_INFER && a->rate * a->seconds > ARGS_MAX_REQUESTS) {
        fprintf(stderr, "dilu-gpu-check: --rate must be at most %.0f / --seconds (%g), got %g\n", ARGS_MAX_REQUESTS,
                a->seconds, a->rate);
        exit(2);
    }
}
