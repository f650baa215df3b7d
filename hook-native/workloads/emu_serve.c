/*
 * An emulated inference server over HTTP, for load from outside the pod: each request to /infer joins a
 * batch (up to --batch requests, the oldest waiting at most --max-wait-ms); a batch runs the model's kernel
 * sequence on the (emulated) GPU, then every request in it is answered with its latency. GET /stats gives
 * the count and latency percentiles of the latest requests; GET /healthz answers once the GPU is ready.
 *
 * With --stats-port S it also plays Knative queue-proxy's stats port, so that an autoscaler scraping pods as
 * Knative's does can scale a Deployment of these servers: GET :S/metrics gives the last complete 1-second
 * reporting period (queue_stats.h): the /infer requests that arrived in it, their time-averaged concurrency,
 * none proxied, and the uptime at its end; as one protobuf Stat for Accept: application/protobuf, as
 * Prometheus text (queue-proxy's gauge names) otherwise. The pod name is --pod-name, else $POD_NAME, else
 * the host name.
 *
 * Whatever reaches either port is someone else's input (http_server.h): headers are capped, bodies are read
 * and dropped up to a cap, a silent client is cut after --idle-s, and connections beyond --max-connections
 * (counted per port) are refused.
 *
 *   emu-serve --port P [--host A] [--batch N] [--max-wait-ms W] [--kernels K] [--blocks B] [--block-us U]
 *             [--blocks-per-item X] [--memory-mib M] [--memory-per-item-mib m]
 *             [--max-connections C] [--idle-s S] [--stats-port S] [--pod-name NAME] [--load-ms L]
 * --batch defaults to $DILU_BATCH_SIZE when that is set: the batch size the profiler chose reaches a served
 * container that way. The model's memory (--memory-mib, --memory-per-item-mib × --batch) is allocated before
 * the server listens and held while it runs (the emulated GPU reclaims it when the process ends).
 * --load-ms L (default 0, at most 600000) waits L ms after setting up the GPU before listening: the model's
 * load, the part of a cold start that a container start does not include.
 * It prints "listening on PORT" first, then "stats on PORT" with --stats-port (0 for either: a free port).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "http_server.h"
#include "model_memory.h"
#include "queue_stats.h"
#include "request_stats.h"
#include "workload.h"

#define WINDOW 4096 /* latencies kept for /stats */

typedef struct request {
    uint64_t arrived;
    uint64_t done; /* 0 until its batch ran */
    struct request *next;
} request;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t queued;   /* a request joined the queue */
    pthread_cond_t finished; /* a batch ran */
    request *head, *tail;
    long waiting;
    int ready; /* the GPU is set up */
    long served, batches;
    double window[WINDOW];
} server = {.lock = PTHREAD_MUTEX_INITIALIZER, .queued = PTHREAD_COND_INITIALIZER,
            .finished = PTHREAD_COND_INITIALIZER};

static model m = MODEL_DEFAULTS;
static double load_ms; /* the model's load into GPU memory, before the server is ready */

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void lock(void) {
    if (pthread_mutex_lock(&server.lock) != 0) {
        abort();
    }
}

static void unlock(void) {
    if (pthread_mutex_unlock(&server.lock) != 0) {
        abort();
    }
}

static void wait_on(pthread_cond_t *c) {
    if (pthread_cond_wait(c, &server.lock) != 0) {
        abort();
    }
}

static void wake(pthread_cond_t *c) {
    if (pthread_cond_broadcast(c) != 0) {
        abort();
    }
}

/* ---- the GPU side: one thread, one context, batches in arrival order ---- */

static void *batcher(void *arg) {
    (void)arg;
    CUcontext ctx;
    CUstream stream;
    CHECK(cuInit(0));
    CHECK(cuCtxCreate_v2(&ctx, 0, 0));
    CHECK(cuStreamCreate(&stream, 0));
    CUfunction f = load_kernel(m.block_us);
    model_memory memory;
    if (model_memory_alloc(&m, &memory) != 0) {
        exit(3);
    }
    /* A cold start is mostly the model's weights reaching GPU memory; the emulated GPU copies nothing, so the
     * time is taken here, before the server listens (and its readiness probe passes). */
    long long load_ns = (long long)(load_ms * 1e6);
    struct timespec load = {.tv_sec = (time_t)(load_ns / 1000000000LL), .tv_nsec = (long)(load_ns % 1000000000LL)};
    while (nanosleep(&load, &load) != 0) {
        if (errno != EINTR) {
            abort();
        }
    }
    lock();
    server.ready = 1;
    wake(&server.finished);
    for (;;) {
        while (server.waiting == 0) {
            wait_on(&server.queued);
        }
        /* The oldest request opens the batch; more may join until it is full or the oldest waited enough. */
        uint64_t deadline = server.head->arrived + (uint64_t)(m.max_wait_ms * 1e6);
        while (server.waiting < (long)m.batch && now_ns() < deadline) {
            uint64_t left = deadline - now_ns();
            struct timespec until;
            if (clock_gettime(CLOCK_REALTIME, &until) != 0) {
                abort();
            }
            until.tv_sec += (time_t)(left / 1000000000ull);
            until.tv_nsec += (long)(left % 1000000000ull);
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            int rc = pthread_cond_timedwait(&server.queued, &server.lock, &until);
            if (rc != 0 && rc != ETIMEDOUT) {
                abort();
            }
        }
        long n = server.waiting < (long)m.batch ? server.waiting : (long)m.batch;
        request *first = server.head, *last = first;
        for (long i = 1; i < n; i++) {
            last = last->next;
        }
        server.head = last->next;
        if (server.head == NULL) {
            server.tail = NULL;
        }
        last->next = NULL;
        server.waiting -= n;
        unlock();
        run_batch(&m, f, stream, n);
        uint64_t done = now_ns();
        lock();
        for (request *r = first; r != NULL; r = r->next) {
            r->done = done;
            server.window[server.served % WINDOW] = (double)(done - r->arrived) / 1e6;
            server.served++;
        }
        server.batches++;
        wake(&server.finished);
    }
    return NULL;
}

/* Queues a request and waits until its batch ran; returns its latency in ms. */
static double infer(void) {
    request r = {.arrived = now_ns()};
    lock();
    if (server.tail == NULL) {
        server.head = &r;
    } else {
        server.tail->next = &r;
    }
    server.tail = &r;
    server.waiting++;
    wake(&server.queued);
    while (r.done == 0) {
        wait_on(&server.finished);
    }
    unlock();
    return (double)(r.done - r.arrived) / 1e6;
}

static int stats(char *out, size_t len) {
    double *sorted = malloc(sizeof(double) * WINDOW);
    if (sorted == NULL) {
        return snprintf(out, len, "{\"error\":\"out of memory\"}");
    }
    lock();
    long n = server.served < WINDOW ? server.served : WINDOW;
    memcpy(sorted, server.window, sizeof(double) * (size_t)n);
    long served = server.served, batches = server.batches;
    unlock();
    qsort(sorted, (size_t)n, sizeof(double), compare);
    int written = snprintf(out, len,
                    "{\"requests\":%ld,\"batches\":%ld,\"window\":%ld,\"p50_ms\":%.3f,\"p95_ms\":%.3f,\"p99_ms\":%.3f}",
                    served, batches, n, n > 0 ? sorted[n / 2] : 0.0, n > 0 ? sorted[(long)(n * 0.95)] : 0.0,
                    n > 0 ? sorted[(long)(n * 0.99)] : 0.0);
    free(sorted);
    return written;
}

/* ---- HTTP ---- */

static int route(int fd, const http_request *request, int keep) {
    const char *method = request->method, *path = request->path;
    char out[256];
    if (strcmp(path, "/infer") == 0 && (strcmp(method, "POST") == 0 || strcmp(method, "GET") == 0)) {
        /* Only inference is counted for the stats port: queue-proxy does not count probes (/healthz) either. */
        request_stats_in();
        snprintf(out, sizeof(out), "{\"latency_ms\":%.3f}", infer());
        int rc = http_json(fd, 200, "OK", out, keep);
        request_stats_out();
        return rc;
    }
    if (strcmp(path, "/stats") == 0 && strcmp(method, "GET") == 0) {
        stats(out, sizeof(out));
        return http_json(fd, 200, "OK", out, keep);
    }
    if (strcmp(path, "/healthz") == 0 && strcmp(method, "GET") == 0) {
        return http_json(fd, 200, "OK", "{\"ready\":true}", keep);
    }
    return http_json(fd, 404, "Not Found", "{\"error\":\"POST /infer, GET /stats or GET /healthz\"}", keep);
}

/* --pod-name, else $POD_NAME (set from the downward API), else the host name, which is the pod's in a pod. */
static int pick_pod_name(const char *option) {
    const char *env = getenv("POD_NAME");
    char host[256];
    const char *name = option;
    if (name == NULL && env != NULL && env[0] != '\0') {
        name = env;
    }
    if (name == NULL) {
        if (gethostname(host, sizeof(host)) != 0) {
            perror("gethostname");
            return -1;
        }
        host[sizeof(host) - 1] = '\0';
        name = host;
    }
    if (queue_stats_pod(name) != 0) {
        fprintf(stderr, "pod name '%s' is not allowed: 1..%d printable ASCII characters, no space\n", name, POD_NAME_MAX);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    double port = -1, stats_port = -1;
    const char *host = "0.0.0.0", *pod_name = NULL;
    http_server api = {.route = route, .max_connections = 256, .idle_s = 30};
    http_server metrics = {.route = queue_stats_route};
    model_batch_from_env(&m);
    static const struct option options[] = {
        {"port", required_argument, NULL, 'p'},    {"host", required_argument, NULL, 'h'},
        {"max-connections", required_argument, NULL, 'c'}, {"idle-s", required_argument, NULL, 'i'},
        {"stats-port", required_argument, NULL, 's'}, {"pod-name", required_argument, NULL, 'o'},
        {"load-ms", required_argument, NULL, 'l'}, MODEL_OPTIONS, {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        if (model_option(&m, c, optarg)) {
            continue;
        }
        switch (c) {
        case 'p': port = parse_double("port", optarg, 0, 65535); break;
        case 'h': host = optarg; break;
        case 'c': api.max_connections = (int)parse_double("max-connections", optarg, 1, 65536); break;
        case 'i': api.idle_s = parse_double("idle-s", optarg, 0.1, 86400); break;
        case 's': stats_port = parse_double("stats-port", optarg, 0, 65535); break;
        case 'o': pod_name = optarg; break;
        case 'l': load_ms = parse_double("load-ms", optarg, 0, 600000); break;
        default:
            fprintf(stderr, "usage: emu-serve --port P [--host A] " MODEL_USAGE
                            " [--max-connections C] [--idle-s S] [--stats-port S] [--pod-name NAME] [--load-ms L]\n");
            return 2;
        }
    }
    if (port < 0) {
        fprintf(stderr, "--port is required (0: any free port)\n");
        return 2;
    }
    model_check(&m);
    struct in_addr addr;
    if (inet_pton(AF_INET, host, &addr) != 1) {
        fprintf(stderr, "--host=%s is not allowed: must be an IPv4 address\n", host);
        return 2;
    }
    if (stats_port >= 0 && pick_pod_name(pod_name) != 0) {
        return 2;
    }
    /* The same bounds on both ports: the stats port faces the same outside. */
    metrics.max_connections = api.max_connections;
    metrics.idle_s = api.idle_s;
    request_stats_start();
    pthread_t gpu;
    if (pthread_create(&gpu, NULL, batcher, NULL) != 0) {
        perror("pthread_create");
        return 3;
    }
    lock();
    while (!server.ready) {
        wait_on(&server.finished);
    }
    unlock();
    int bound = http_listen(&api, addr, (int)port);
    int stats_bound = stats_port >= 0 ? http_listen(&metrics, addr, (int)stats_port) : 0;
    if (bound < 0 || stats_bound < 0) {
        return 3;
    }
    printf("listening on %d\n", bound);
    if (stats_port >= 0) {
        printf("stats on %d\n", stats_bound);
    }
    fflush(stdout);
    pthread_t scraped;
    if (stats_port >= 0 && pthread_create(&scraped, NULL, http_accept, &metrics) != 0) {
        perror("pthread_create");
        return 3;
    }
    http_accept(&api);
    return 3; /* http_accept never returns */
}
