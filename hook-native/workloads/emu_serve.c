/*
 * An emulated inference server over HTTP, for load from outside the pod: each request to /infer joins a
 * batch (up to --batch requests, the oldest waiting at most --max-wait-ms); a batch runs the model's kernel
 * sequence on the (emulated) GPU, then every request in it is answered with its latency. GET /stats gives
 * the count and latency percentiles of the latest requests; GET /healthz answers once the GPU is ready.
 *
 * Whatever reaches the port is someone else's input: headers are capped, bodies are read and dropped up to
 * a cap, a silent client is cut after --idle-s, and connections beyond --max-connections are refused.
 *
 *   emu-serve --port P [--host A] [--batch N] [--max-wait-ms W] [--kernels K] [--blocks B] [--block-us U]
 *             [--max-connections C] [--idle-s S]
 * With --port 0 it picks a port and prints "listening on PORT" first.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "workload.h"

#define MAX_HEADER 8192
#define MAX_BODY (1 << 20)
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
static double idle_s = 30;
static atomic_int connections;
static int max_connections = 256;

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
        run_batch(&m, f, stream);
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

/* ---- HTTP: one thread per connection, keep-alive, bounded everywhere ---- */

static int send_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n <= 0) {
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static int answer(int fd, int status, const char *reason, const char *body, int keep) {
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: %s\r\n\r\n",
                     status, reason, strlen(body), keep ? "keep-alive" : "close");
    return send_all(fd, head, (size_t)n) == 0 && send_all(fd, body, strlen(body)) == 0 ? 0 : -1;
}

/* Reads until buf (NUL-terminated, *have bytes) holds a whole request head; returns the head's length (what
 * follows it stays in buf), -1 when the client went away or was silent too long, -2 when the head is too big. */
static long read_head(int fd, char *buf, long *have) {
    for (;;) {
        buf[*have] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (end != NULL) {
            return end - buf + 4;
        }
        if (*have >= MAX_HEADER) {
            return -2;
        }
        ssize_t n = recv(fd, buf + *have, (size_t)(MAX_HEADER - *have), 0);
        if (n <= 0) {
            return -1;
        }
        *have += n;
    }
}

static long content_length(const char *head) {
    for (const char *line = strstr(head, "\r\n"); line != NULL; line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, "Content-Length:", 15) == 0) {
            char *end = NULL;
            long v = strtol(line + 17, &end, 10);
            return end == line + 17 || v < 0 ? -1 : v;
        }
    }
    return 0;
}

static void serve(int fd) {
    char buf[MAX_HEADER + 1];
    long have = 0;
    for (;;) {
        long head = read_head(fd, buf, &have);
        if (head == -2) {
            answer(fd, 431, "Request Header Fields Too Large", "{\"error\":\"the request head exceeds 8 KiB\"}", 0);
            return;
        }
        if (head < 0) {
            return;
        }
        char after = buf[head]; /* parse only this request's head, not a pipelined one after it */
        buf[head] = '\0';
        char method[8], path[64], version[16];
        if (sscanf(buf, "%7s %63s %15s", method, path, version) != 3 || strncmp(version, "HTTP/1.", 7) != 0) {
            answer(fd, 400, "Bad Request", "{\"error\":\"the request line must be METHOD PATH HTTP/1.x\"}", 0);
            return;
        }
        long body = content_length(buf);
        if (body < 0 || body > MAX_BODY) {
            answer(fd, 413, "Payload Too Large", "{\"error\":\"Content-Length must be 0..1048576\"}", 0);
            return;
        }
        int keep = strcmp(version, "HTTP/1.1") == 0 && strcasestr(buf, "\r\nConnection: close") == NULL;
        buf[head] = after;
        /* The body carries no input the emulated model reads: skip it, whatever part came with the head. */
        long extra = have - head;
        long skip = body < extra ? body : extra;
        memmove(buf, buf + head + skip, (size_t)(extra - skip));
        have = extra - skip;
        for (long left = body - skip; left > 0;) {
            char sink[4096];
            ssize_t n = recv(fd, sink, (size_t)(left < (long)sizeof(sink) ? left : (long)sizeof(sink)), 0);
            if (n <= 0) {
                return;
            }
            left -= n;
        }
        char out[256];
        int rc;
        if (strcmp(path, "/infer") == 0 && (strcmp(method, "POST") == 0 || strcmp(method, "GET") == 0)) {
            snprintf(out, sizeof(out), "{\"latency_ms\":%.3f}", infer());
            rc = answer(fd, 200, "OK", out, keep);
        } else if (strcmp(path, "/stats") == 0 && strcmp(method, "GET") == 0) {
            stats(out, sizeof(out));
            rc = answer(fd, 200, "OK", out, keep);
        } else if (strcmp(path, "/healthz") == 0 && strcmp(method, "GET") == 0) {
            rc = answer(fd, 200, "OK", "{\"ready\":true}", keep);
        } else {
            rc = answer(fd, 404, "Not Found", "{\"error\":\"POST /infer, GET /stats or GET /healthz\"}", keep);
        }
        if (rc != 0 || !keep) {
            return;
        }
    }
}

static void *connection(void *arg) {
    int fd = (int)(intptr_t)arg;
    serve(fd);
    if (close(fd) != 0) {
        perror("close");
    }
    atomic_fetch_sub(&connections, 1);
    return NULL;
}

int main(int argc, char **argv) {
    double port = -1;
    const char *host = "0.0.0.0";
    static const struct option options[] = {
        {"port", required_argument, NULL, 'p'},    {"host", required_argument, NULL, 'h'},
        {"max-connections", required_argument, NULL, 'c'}, {"idle-s", required_argument, NULL, 'i'},
        MODEL_OPTIONS, {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        if (model_option(&m, c, optarg)) {
            continue;
        }
        switch (c) {
        case 'p': port = parse_double("port", optarg, 0, 65535); break;
        case 'h': host = optarg; break;
        case 'c': max_connections = (int)parse_double("max-connections", optarg, 1, 65536); break;
        case 'i': idle_s = parse_double("idle-s", optarg, 0.1, 86400); break;
        default:
            fprintf(stderr, "usage: emu-serve --port P [--host A] " MODEL_USAGE " [--max-connections C] [--idle-s S]\n");
            return 2;
        }
    }
    if (port < 0) {
        fprintf(stderr, "--port is required (0: any free port)\n");
        return 2;
    }
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
        fprintf(stderr, "--host=%s is not allowed: must be an IPv4 address\n", host);
        return 2;
    }
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
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    socklen_t len = sizeof(addr);
    if (listener < 0 || setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(listener, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(listener, 128) != 0 ||
        getsockname(listener, (struct sockaddr *)&addr, &len) != 0) {
        perror("listen");
        return 3;
    }
    printf("listening on %d\n", ntohs(addr.sin_port));
    fflush(stdout);
    pthread_attr_t detached;
    if (pthread_attr_init(&detached) != 0 || pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED) != 0 ||
        pthread_attr_setstacksize(&detached, 256 * 1024) != 0) {
        perror("pthread_attr");
        return 3;
    }
    struct timeval idle = {.tv_sec = (time_t)idle_s, .tv_usec = (suseconds_t)((idle_s - (double)(time_t)idle_s) * 1e6)};
    for (;;) {
        int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EINTR && errno != ECONNABORTED) {
                perror("accept");
            }
            continue;
        }
        if (atomic_fetch_add(&connections, 1) >= max_connections ||
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof(idle)) != 0) {
            answer(fd, 503, "Service Unavailable", "{\"error\":\"too many connections\"}", 0);
            if (close(fd) != 0) {
                perror("close");
            }
            atomic_fetch_sub(&connections, 1);
            continue;
        }
        pthread_t t;
        if (pthread_create(&t, &detached, connection, (void *)(intptr_t)fd) != 0) {
            if (close(fd) != 0) {
                perror("close");
            }
            atomic_fetch_sub(&connections, 1);
        }
    }
}
