/*
 * An emulated inference server: requests arrive by a Poisson rate, a per-second rate trace, or at the times
 * listed in a file; they are batched (up to --batch, waiting at most --max-wait-ms), and each batch runs the
 * model's kernel sequence. --batch defaults to $DILU_BATCH_SIZE when that is set.
 *
 * --trial-batches N is trial mode (trial.h), closed loop, no arrivals: one warm-up batch of --batch requests,
 * then N batches back to back, each timed in emulated time; prints, and writes to $DILU_TRIAL_RESULT when set,
 * DILU_TRIAL latency_s=<mean batch time> throughput_rps=<batch / that> memory_mib=<allocated>. Only with the
 * option: a plain run serves its arrivals whatever the environment says.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "model_memory.h"
#include "trial.h"
#include "workload.h"

#define MAX_REQUESTS 2000000

static uint64_t *arrivals;   /* arrival time of request i, ns since start */
static long total;           /* requests in the run */

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static long load_trace(const char *path, double scale, unsigned seed) {
    FILE *in = fopen(path, "r");
    if (in == NULL) {
        perror(path);
        exit(2);
    }
    double rate;
    long second = 0, n = 0;
    while (fscanf(in, "%lf", &rate) == 1) {
        /* Poisson arrivals within each second of the trace. */
        double t = 0;
        for (;;) {
            double u = (double)rand_r(&seed) / ((double)RAND_MAX + 1.0);
            t += -log(1 - u) / (rate * scale > 0 ? rate * scale : 1e-9);
            if (t >= 1.0 || n >= MAX_REQUESTS) {
                break;
            }
            arrivals[n++] = (uint64_t)((second + t) * 1e9);
        }
        second++;
    }
    if (fclose(in) != 0) {
        perror(path);
        exit(2);
    }
    return n;
}

/* One arrival time per line, in seconds from the start, ascending. */
static long load_arrivals(const char *path) {
    FILE *in = fopen(path, "r");
    if (in == NULL) {
        perror(path);
        exit(2);
    }
    double t, last = 0;
    long n = 0;
    while (n < MAX_REQUESTS && fscanf(in, "%lf", &t) == 1) {
        if (!(t >= last && t < 86400)) {
            fprintf(stderr, "%s: arrival %ld at %g s is not allowed: must be in %g..86400, ascending\n", path, n + 1,
                    t, last);
            exit(2);
        }
        arrivals[n++] = (uint64_t)(t * 1e9);
        last = t;
    }
    if (fclose(in) != 0) {
        perror(path);
        exit(2);
    }
    return n;
}

/* Trial mode: --trial-batches N closed-loop batches of a full --batch, reported as one DILU_TRIAL line. */
static int trial(const model *m, long batches) {
    CUcontext ctx;
    CUstream stream;
    model_memory memory;
    CHECK(cuInit(0));
    CHECK(cuCtxCreate_v2(&ctx, 0, 0));
    CHECK(cuStreamCreate(&stream, 0));
    CUfunction f = load_kernel(m->block_us);
    if (model_memory_alloc(m, &memory) != 0) {
        return 3;
    }
    double latency = trial_batches(m, f, stream, (long)m->batch, batches);
    int rc = trial_report(latency, latency > 0 ? m->batch / latency : 0, memory.mib);
    model_memory_free(&memory);
    CHECK(cuStreamDestroy_v2(stream));
    return rc == 0 ? 0 : 3;
}

int main(int argc, char **argv) {
    double rate = 100, seconds = 5, scale = 1;
    long trial_runs = 0;
    model m = MODEL_DEFAULTS;
    model_batch_from_env(&m);
    const char *trace = NULL, *latencies = NULL, *arrival_file = NULL;
    unsigned seed = 42;
    static const struct option options[] = {
        {"rate", required_argument, NULL, 'r'},    {"seconds", required_argument, NULL, 's'},
        {"trace", required_argument, NULL, 't'},   {"scale", required_argument, NULL, 'x'},
        {"latencies", required_argument, NULL, 'l'}, {"seed", required_argument, NULL, 'e'},
        {"arrivals", required_argument, NULL, 'a'}, {"trial-batches", required_argument, NULL, 'T'},
        MODEL_OPTIONS, {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        if (model_option(&m, c, optarg)) {
            continue;
        }
        switch (c) {
        case 'r': rate = parse_double("rate", optarg, 0.001, 1e6); break;
        case 's': seconds = parse_double("seconds", optarg, 0.001, 86400); break;
        case 't': trace = optarg; break;
        case 'x': scale = parse_double("scale", optarg, 0, 1e6); break;
        case 'l': latencies = optarg; break;
        case 'e': seed = (unsigned)parse_double("seed", optarg, 0, 4294967295.0); break;
        case 'a': arrival_file = optarg; break;
        case 'T': trial_runs = (long)parse_integer("trial-batches", optarg, 1, TRIAL_MAX_RUNS); break;
        default:
            fprintf(stderr, "usage: emu-infer [--rate R --seconds S | --trace FILE [--scale X] | --arrivals FILE | "
                            "--trial-batches N] " MODEL_USAGE " [--latencies FILE]\n");
            return 2;
        }
    }
    model_check(&m);
    if (trial_runs > 0) {
        return trial(&m, trial_runs);
    }
    arrivals = malloc(sizeof(*arrivals) * MAX_REQUESTS);
    if (arrivals == NULL) {
        perror("malloc");
        return 3;
    }
    if (arrival_file != NULL) {
        total = load_arrivals(arrival_file);
    } else if (trace != NULL) {
        total = load_trace(trace, scale, seed);
    } else {
        double t = 0;
        while (total < MAX_REQUESTS) {
            double u = (double)rand_r(&seed) / ((double)RAND_MAX + 1.0);
            t += -log(1 - u) / rate;
            if (t >= seconds) {
                break;
            }
            arrivals[total++] = (uint64_t)(t * 1e9);
        }
    }
    if (total == 0) {
        fprintf(stderr, "no requests to serve\n");
        return 2;
    }
    double *latency = malloc(sizeof(*latency) * (size_t)total);
    if (latency == NULL) {
        perror("malloc");
        return 3;
    }
    CUcontext ctx;
    CUstream stream;
    CHECK(cuInit(0));
    CHECK(cuCtxCreate_v2(&ctx, 0, 0));
    CHECK(cuStreamCreate(&stream, 0));
    CUfunction f = load_kernel(m.block_us);
    model_memory memory;
    if (model_memory_alloc(&m, &memory) != 0) {
        free(latency);
        free(arrivals);
        return 3;
    }

    uint64_t start = now_ns();
    long next = 0;
    while (next < total) {
        uint64_t now = now_ns() - start;
        if (arrivals[next] > now) {
            uint64_t wait = arrivals[next] - now;
            struct timespec ts = {.tv_sec = (time_t)(wait / 1000000000ull), .tv_nsec = (long)(wait % 1000000000ull)};
            nanosleep(&ts, NULL);
            continue;
        }
        /* The oldest waiting request opens a batch; wait for more until it is full or the wait is over. */
        uint64_t deadline = arrivals[next] + (uint64_t)(m.max_wait_ms * 1e6);
        long end = next;
        for (;;) {
            now = now_ns() - start;
            while (end < total && end - next < (long)m.batch && arrivals[end] <= now) {
                end++;
            }
            if (end - next >= (long)m.batch || now >= deadline || end == total) {
                break;
            }
            uint64_t until = end < total && arrivals[end] < deadline ? arrivals[end] : deadline;
            if (until > now) {
                uint64_t wait = until - now;
                struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(wait < 999999999ull ? wait : 999999999ull)};
                nanosleep(&ts, NULL);
            }
        }
        run_batch(&m, f, stream, end - next);
        uint64_t done = now_ns() - start;
        for (long i = next; i < end; i++) {
            latency[i] = (double)(done - arrivals[i]) / 1e6;
        }
        next = end;
    }
    double elapsed = (double)(now_ns() - start) / 1e9;
    if (latencies != NULL) {
        FILE *out = fopen(latencies, "w");
        if (out == NULL) {
            perror(latencies);
            return 3;
        }
        for (long i = 0; i < total; i++) {
            fprintf(out, "%.3f\n", latency[i]);
        }
        if (fclose(out) != 0) {
            perror(latencies);
            return 3;
        }
    }
    qsort(latency, (size_t)total, sizeof(*latency), compare);
    printf("RESULT requests=%ld p50_ms=%.3f p95_ms=%.3f p99_ms=%.3f throughput_rps=%.1f\n", total,
           latency[(long)(total * 0.50)], latency[(long)(total * 0.95)], latency[(long)(total * 0.99)],
           (double)total / elapsed);
    free(latency);
    free(arrivals);
    model_memory_free(&memory);
    CHECK(cuStreamDestroy_v2(stream));
    return 0;
}
