/*
 * emu-serve's queue-proxy stats port over real sockets: the protobuf Stat decoded here field by field, the
 * requests of the reporting periods adding up to those sent, the Prometheus text, 404 and 405, hostile heads
 * refused, the connection cap and the idle cut of that port, and where the pod name comes from.
 * Usage: serve-stats-test (EMU_SERVE compiled in).
 *
 * Nothing here depends on how fast the machine is: periods are told apart by their process_uptime (the
 * whole second at which each ended), and a measurement in which the test missed a period (it was not
 * scheduled for over a second) is thrown away and made again, never judged.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "expect.h"
#include "http_client.h"

#define CLIENTS 4
#define PER_CLIENT 6
#define MAX_CONNECTIONS 8
#define ATTEMPTS 5
#define PERIODS 512 /* far more than a measurement spans */

static const char SCRAPE[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/protobuf\r\n\r\n";

typedef struct server {
    pid_t pid;
    FILE *out;
    int port, stats;
} server;

static pid_t running; /* killed at exit, so that a failed test leaves no server behind */

static void kill_running(void) {
    if (running > 0 && kill(running, SIGKILL) == 0) {
        waitpid(running, NULL, 0);
    }
}

/* Starts emu-serve with --stats-port 0 and the arguments given; pod: $POD_NAME for it, NULL for none. */
static server start(const char *pod, const char *const *args) {
    const char *argv[32] = {EMU_SERVE, "--port", "0", "--host", "127.0.0.1", "--stats-port", "0", "--kernels", "2",
                            "--blocks", "108", "--block-us", "20"};
    int n = 13;
    for (; *args != NULL && n < 31; args++) {
        argv[n++] = *args;
    }
    argv[n] = NULL;
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        perror("pipe");
        exit(3);
    }
    pid_t pid = fork();
    if (pid == 0) {
        if (dup2(pipefd[1], STDOUT_FILENO) < 0 || (pod != NULL ? setenv("POD_NAME", pod, 1) : unsetenv("POD_NAME")) != 0) {
            _exit(3);
        }
        execv(EMU_SERVE, (char *const *)argv);
        _exit(3);
    }
    if (pid < 0 || close(pipefd[1]) != 0) {
        perror("fork");
        exit(3);
    }
    running = pid;
    server s = {.pid = pid, .out = fdopen(pipefd[0], "r")};
    if (s.out == NULL || fscanf(s.out, "listening on %d stats on %d", &s.port, &s.stats) != 2) {
        fprintf(stderr, "the server did not say where it listens\n");
        exit(3);
    }
    return s;
}

static void stop(server *s) {
    int status = 0;
    if (kill(s->pid, SIGTERM) != 0 || waitpid(s->pid, &status, 0) != s->pid || fclose(s->out) != 0) {
        perror("stopping the server");
        exit(3);
    }
    running = 0;
}

static void hang_up(int fd) {
    if (close(fd) != 0) {
        perror("close");
        exit(3);
    }
}

static void pause_ms(long ms) {
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

/* ---- the Stat, decoded by the wire format's rules alone ---- */

typedef struct stat_msg {
    char pod[256];
    double field[7]; /* 2..6: the doubles by field number */
    int64_t timestamp;
    unsigned seen; /* bit n: field n was there */
} stat_msg;

static int read_varint(const uint8_t *p, size_t len, size_t *at, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*at >= len) {
            return -1;
        }
        uint8_t b = p[(*at)++];
        *v |= (uint64_t)(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
            return 0;
        }
    }
    return -1;
}

static int decode(const uint8_t *p, size_t len, stat_msg *s) {
    memset(s, 0, sizeof(*s));
    for (size_t at = 0; at < len;) {
        uint64_t key, v;
        if (read_varint(p, len, &at, &key) != 0) {
            return -1;
        }
        unsigned field = (unsigned)(key >> 3);
        switch (key & 7) {
        case 0: /* varint */
            if (read_varint(p, len, &at, &v) != 0) {
                return -1;
            }
            if (field == 7) {
                s->timestamp = (int64_t)v;
            }
            break;
        case 1: /* fixed64, little-endian */
            if (len - at < 8) {
                return -1;
            }
            v = 0;
            for (int i = 0; i < 8; i++) {
                v |= (uint64_t)p[at + (size_t)i] << (8 * i);
            }
            at += 8;
            if (field >= 2 && field <= 6) {
                memcpy(&s->field[field], &v, sizeof(double));
            }
            break;
        case 2: /* length-delimited */
            if (read_varint(p, len, &at, &v) != 0 || v > len - at) {
                return -1;
            }
            if (field == 1) {
                if (v >= sizeof(s->pod)) {
                    return -1;
                }
                memcpy(s->pod, p + at, (size_t)v);
            }
            at += (size_t)v;
            break;
        default:
            return -1;
        }
        if (field < 32) {
            s->seen |= 1u << field;
        }
    }
    return 0;
}

#define POD(s) ((s).pod)
#define AVERAGE_CONCURRENT(s) ((s).field[2])
#define AVERAGE_PROXIED_CONCURRENT(s) ((s).field[3])
#define REQUEST_COUNT(s) ((s).field[4])
#define PROXIED_REQUEST_COUNT(s) ((s).field[5])
#define UPTIME(s) ((s).field[6])

/* One scrape on a connection of its own, the way the autoscaler asks; exits if it does not parse. */
static stat_msg scrape(int port) {
    char out[2048];
    int fd = dial(port);
    int status = request(fd, SCRAPE, out, sizeof(out));
    hang_up(fd);
    size_t len;
    const char *body = body_of(out, &len);
    stat_msg s;
    if (status != 200 || strstr(out, "\r\nContent-Type: application/protobuf\r\n") == NULL ||
        decode((const uint8_t *)body, len, &s) != 0) {
        fprintf(stderr, "FAIL: a scrape answered %d, not a protobuf Stat: %.300s\n", status, out);
        exit(1);
    }
    return s;
}

/* ---- traffic, and the periods it landed in ---- */

typedef struct traffic {
    int port;
    atomic_int done, ok;
} traffic;

static void *client(void *arg) {
    traffic *t = arg;
    int fd = dial(t->port);
    char out[1024];
    for (int i = 0; i < PER_CLIENT; i++) {
        if (request(fd, "POST /infer HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", out, sizeof(out)) == 200) {
            atomic_fetch_add(&t->ok, 1);
        }
        pause_ms(250); /* a client sends over 1.25 s: the traffic spans periods, whose counts are then summed */
    }
    hang_up(fd);
    atomic_fetch_add(&t->done, 1);
    return NULL;
}

/*
 * Sends CLIENTS x PER_CLIENT requests while scraping every 20 ms. A scrape whose uptime is k0 was answered
 * in [k0, k0 + 1) s, so every request sent after it lands in a period ending at k0 + 1 or later; one whose
 * uptime is k1, made once every request was answered, so they all landed in periods ending by k1 + 1. When
 * the scrapes saw each period from k0 + 1 to k1 + 1, their requests must add up to those sent; returns 1
 * then, and 0 when some period went unseen (the measurement tells nothing and is made again).
 */
static int measure(const server *s, const char *pod) {
    static stat_msg periods[PERIODS];
    static int seen[PERIODS];
    memset(seen, 0, sizeof(seen));
    stat_msg first = scrape(s->stats);
    for (int polls = 0; UPTIME(first) < 1; polls++) {
        EXPECT(polls < 3000, "no reporting period ended in a minute");
        if (polls >= 3000) {
            return 1;
        }
        pause_ms(20);
        first = scrape(s->stats);
    }
    long k0 = (long)UPTIME(first), k1 = -1, latest = k0;
    traffic t = {.port = s->port};
    pthread_t threads[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        if (pthread_create(&threads[i], NULL, client, &t) != 0) {
            perror("pthread_create");
            exit(3);
        }
    }
    for (int polls = 0; k1 < 0 || latest < k1 + 1; polls++) {
        if (polls >= 6000) { /* two minutes: the server no longer closes periods */
            EXPECT(0, "the periods stopped at %ld", latest);
            break;
        }
        int finished = atomic_load(&t.done) == CLIENTS; /* read before the scrape, so that it comes after */
        stat_msg now = scrape(s->stats);
        long k = (long)UPTIME(now);
        EXPECT(k >= latest, "uptime went back from %ld to %ld", latest, k);
        EXPECT(strcmp(POD(now), pod) == 0, "pod_name '%s', expected '%s'", POD(now), pod);
        EXPECT(now.seen == 0xfe, "fields present: %#x, expected 1..7", now.seen);
        latest = k > latest ? k : latest;
        if (finished && k1 < 0) {
            k1 = k;
        }
        if (k - k0 >= 0 && k - k0 < PERIODS) {
            /* A period's stat_msg is a snapshot: read twice, it reads the same. */
            EXPECT(!seen[k - k0] || memcmp(&periods[k - k0], &now, sizeof(now)) == 0, "period %ld changed between reads", k);
            periods[k - k0] = now;
            seen[k - k0] = 1;
        }
        pause_ms(20);
    }
    for (int i = 0; i < CLIENTS; i++) {
        if (pthread_join(threads[i], NULL) != 0) {
            perror("pthread_join");
            exit(3);
        }
    }
    EXPECT(atomic_load(&t.ok) == CLIENTS * PER_CLIENT, "%d of %d requests answered 200", atomic_load(&t.ok),
           CLIENTS * PER_CLIENT);
    if (k1 < 0 || k1 + 1 - k0 >= PERIODS) {
        return 1;
    }
    double sum = 0, busiest = 0;
    for (long k = k0 + 1; k <= k1 + 1; k++) {
        if (!seen[k - k0]) {
            fprintf(stderr, "period ending at %ld s unseen (the test was not scheduled for a second): again\n", k);
            return 0;
        }
        stat_msg p = periods[k - k0];
        EXPECT(REQUEST_COUNT(p) >= 0 && REQUEST_COUNT(p) == (double)(long)REQUEST_COUNT(p),
               "period %ld: request_count %g is not a count", k, REQUEST_COUNT(p));
        EXPECT(PROXIED_REQUEST_COUNT(p) == 0 && AVERAGE_PROXIED_CONCURRENT(p) == 0,
               "period %ld: %g proxied, %g on average: nothing is proxied here", k, PROXIED_REQUEST_COUNT(p),
               AVERAGE_PROXIED_CONCURRENT(p));
        EXPECT(AVERAGE_CONCURRENT(p) >= 0 && AVERAGE_CONCURRENT(p) <= CLIENTS + 1e-9,
               "period %ld: %g in flight on average, with %d clients", k, AVERAGE_CONCURRENT(p), CLIENTS);
        EXPECT(p.timestamp > 1600000000 && p.timestamp <= (int64_t)time(NULL) + 1, "period %ld: timestamp %lld", k,
               (long long)p.timestamp);
        sum += REQUEST_COUNT(p);
        busiest = AVERAGE_CONCURRENT(p) > busiest ? AVERAGE_CONCURRENT(p) : busiest;
    }
    EXPECT(sum == CLIENTS * PER_CLIENT, "the periods from %ld to %ld s count %g requests, %d were sent", k0 + 1,
           k1 + 1, sum, CLIENTS * PER_CLIENT);
    EXPECT(busiest > 0, "no request was in flight on average in any period that saw %g", sum);
    printf("%d requests counted over the periods ending at %ld..%ld s, at most %.3f in flight on average\n",
           CLIENTS * PER_CLIENT, k0 + 1, k1 + 1, busiest);
    return 1;
}

/* ---- the rest of the port's contract ---- */

static void text_and_accept(const server *s, const char *pod) {
    char out[8192], line[512];
    int fd = dial(s->stats);
    /* No Accept, or another type: Prometheus text, queue-proxy's gauge names, labelled with the pod. */
    EXPECT(request(fd, "GET /metrics HTTP/1.1\r\n\r\n", out, sizeof(out)) == 200, "text: %s", out);
    EXPECT(strstr(out, "\r\nContent-Type: text/plain; version=0.0.4") != NULL, "text: %.200s", out);
    const char *gauges[] = {"queue_requests_per_second", "queue_proxied_operations_per_second",
                            "queue_average_concurrent_requests", "queue_average_proxied_concurrent_requests",
                            "process_uptime"};
    for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++) {
        snprintf(line, sizeof(line), "\n# TYPE %s gauge\n%s{destination_pod=\"%s\"} ", gauges[i], gauges[i], pod);
        EXPECT(strstr(out, line) != NULL, "no gauge %s for %s in: %s", gauges[i], pod, out);
    }
    snprintf(line, sizeof(line), "\nprocess_uptime{destination_pod=\"%s\"} ", pod);
    const char *uptime = strstr(out, line);
    EXPECT(uptime != NULL && strtod(uptime + strlen(line), NULL) >= 1, "process_uptime: %s", out);
    EXPECT(request(fd, "GET /metrics HTTP/1.1\r\nAccept: text/plain\r\n\r\n", out, sizeof(out)) == 200 &&
               strstr(out, "Content-Type: text/plain") != NULL,
           "Accept: text/plain: %.200s", out);
    /* The header's name and the media type in any case, and among others, as Knative's check would find it. */
    EXPECT(request(fd, "GET /metrics HTTP/1.1\r\naccept: text/plain, Application/Protobuf;q=0.9\r\n\r\n", out, sizeof(out)) == 200 &&
               strstr(out, "Content-Type: application/protobuf") != NULL,
           "accept: ..., Application/Protobuf: %.200s", out);
    /* Only GET /metrics. */
    EXPECT(request(fd, "GET /nope HTTP/1.1\r\n\r\n", out, sizeof(out)) == 404, "GET /nope: %.200s", out);
    EXPECT(request(fd, "GET /infer HTTP/1.1\r\n\r\n", out, sizeof(out)) == 404, "GET /infer on the stats port: %.200s", out);
    EXPECT(request(fd, "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", out, sizeof(out)) == 405 &&
               strstr(out, "\r\nAllow: GET\r\n") != NULL,
           "POST /metrics: %.200s", out);
    EXPECT(request(fd, "GET /metrics HTTP/1.1\r\nAccept: application/protobuf\r\nConnection: close\r\n\r\n", out,
                   sizeof(out)) == 200,
           "still serving on the same connection: %.200s", out);
    hang_up(fd);
}

static void hostile(const server *s) {
    static char big[10000];
    memset(big, 'a', sizeof(big));
    memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
    memcpy(big + sizeof(big) - 5, "\r\n\r\n", 5);
    struct {
        const char *what;
        const char *text;
        int status;
    } cases[] = {{"a head over 8 KiB", big, 431},
                 {"no request line", "garbage\r\n\r\n", 400},
                 {"binary", "\x16\x03\x01\x02\x05\x01\x07\x01\xfc\x03\x03\r\n\r\n", 400},
                 {"not HTTP/1.x", "GET /metrics SPDY/3\r\n\r\n", 400},
                 {"a body over 1 MiB", "POST /metrics HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n", 413},
                 {"a negative length", "GET /metrics HTTP/1.1\r\nContent-Length: -5\r\n\r\n", 413}};
    char out[2048];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int fd = dial(s->stats);
        int status = request(fd, cases[i].text, out, sizeof(out));
        EXPECT(status == cases[i].status, "%s: %d, expected %d", cases[i].what, status, cases[i].status);
        hang_up(fd);
    }
}

/* Connections on the stats port beyond --max-connections get 503; the API port, with a cap of its own, serves
 * on; once they are closed the stats port serves again. Connections closed earlier may still be counted for a
 * moment, so the test holds connections until one is refused rather than expecting the refusal at a given one. */
static void connection_cap(const server *s) {
    int held[MAX_CONNECTIONS + 1], served = 0, refused = 0;
    char out[2048];
    while (served <= MAX_CONNECTIONS && !refused) {
        int fd = dial(s->stats);
        /* A refused connection may lose the 503 to a reset, the request having reached a closed socket. */
        if (request(fd, "GET /metrics HTTP/1.1\r\n\r\n", out, sizeof(out)) == 200) {
            held[served++] = fd;
        } else {
            refused = 1;
            hang_up(fd);
        }
    }
    EXPECT(refused && served <= MAX_CONNECTIONS, "%d connections served with a cap of %d", served, MAX_CONNECTIONS);
    /* The 503 itself, asking nothing so that nothing is left unread to turn the server's close into a reset. A
     * probe with no answer within a second took a slot that a connection closed before had just freed: it is
     * held, and the next one asks again. */
    int extra[MAX_CONNECTIONS], extras = 0, answered = 0;
    while (!answered && extras < MAX_CONNECTIONS) {
        int fd = dial(s->stats);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 1000) == 1) {
            answered = 1;
            EXPECT(response(fd, out, sizeof(out)) == 503 && strstr(out, "too many connections") != NULL,
                   "at the cap: %.200s", out);
            hang_up(fd);
        } else {
            extra[extras++] = fd;
        }
    }
    EXPECT(answered, "no connection beyond the cap was refused");
    for (int i = 0; i < extras; i++) {
        hang_up(extra[i]);
    }
    int fd;
    fd = dial(s->port);
    EXPECT(request(fd, "GET /healthz HTTP/1.1\r\n\r\n", out, sizeof(out)) == 200, "API port beside a full stats port: %.200s",
           out);
    hang_up(fd);
    for (int i = 0; i < served; i++) {
        hang_up(held[i]);
    }
    int status = 0;
    for (int polls = 0; polls < 3000 && status != 200; polls++) {
        fd = dial(s->stats);
        status = request(fd, SCRAPE, out, sizeof(out));
        hang_up(fd);
        if (status != 200) {
            pause_ms(20);
        }
    }
    EXPECT(status == 200, "the stats port did not serve again once its connections were closed: %d", status);
}

/* A client that sends nothing is cut after --idle-s: the server closes (recv sees the end, or a reset). */
static void idle_cut(void) {
    const char *args[] = {"--idle-s", "0.5", "--pod-name", "idle", NULL};
    server s = start(NULL, args);
    int fd = dial(s.stats);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int ready = poll(&p, 1, 120000); /* far beyond 0.5 s: only a server that never cuts gets here */
    char c;
    EXPECT(ready == 1 && recv(fd, &c, 1, 0) <= 0, "a silent client on the stats port was not cut");
    hang_up(fd);
    EXPECT(waitpid(s.pid, NULL, WNOHANG) == 0, "the server is gone after cutting an idle client");
    stop(&s);
}

/* --pod-name over $POD_NAME over the host name; a name no pod can have is refused at the start. */
static void pod_names(void) {
    const char *none[] = {NULL};
    server s = start("from-env", none);
    stat_msg st = scrape(s.stats);
    EXPECT(strcmp(POD(st), "from-env") == 0, "$POD_NAME: '%s'", POD(st));
    stop(&s);
    const char *named[] = {"--pod-name", "from-option", NULL};
    s = start("from-env", named);
    st = scrape(s.stats);
    EXPECT(strcmp(POD(st), "from-option") == 0, "--pod-name beside $POD_NAME: '%s'", POD(st));
    stop(&s);
    char host[256];
    if (gethostname(host, sizeof(host)) != 0) {
        perror("gethostname");
        exit(3);
    }
    host[sizeof(host) - 1] = '\0';
    s = start(NULL, none);
    st = scrape(s.stats);
    EXPECT(strcmp(POD(st), host) == 0, "no name given: '%s', the host is '%s'", POD(st), host);
    stop(&s);
    pid_t pid = fork();
    if (pid == 0) {
        execl(EMU_SERVE, EMU_SERVE, "--port", "0", "--stats-port", "0", "--pod-name", "two words", (char *)NULL);
        _exit(3);
    }
    int status = 0;
    EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 2,
           "a pod name with a space: status %#x, expected exit 2", status);
}

int main(void) {
    if (atexit(kill_running) != 0) {
        return 3;
    }
    const char *pod = "stats-test-pod";
    char cap[16];
    snprintf(cap, sizeof(cap), "%d", MAX_CONNECTIONS);
    const char *args[] = {"--pod-name", pod, "--max-connections", cap, "--batch", "4", "--max-wait-ms", "5", NULL};
    server s = start(NULL, args);
    int measured = 0;
    for (int attempt = 0; attempt < ATTEMPTS && !measured; attempt++) {
        measured = measure(&s, pod);
    }
    EXPECT(measured, "every one of %d measurements missed a period", ATTEMPTS);
    text_and_accept(&s, pod);
    hostile(&s);
    connection_cap(&s);
    stat_msg after = scrape(s.stats);
    EXPECT(strcmp(POD(after), pod) == 0 && UPTIME(after) >= 1, "after all that: pod '%s', uptime %g", POD(after),
           UPTIME(after));
    stop(&s);
    idle_cut();
    pod_names();
    printf("emu-serve stats port: %s\n", failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
