/*
 * The emulated inference server over real sockets: concurrent keep-alive clients are all answered and
 * batched together; it listens only after its model load (--load-ms); hostile requests get 4xx and leave it serving. Usage: serve-test (EMU_SERVE compiled in).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "expect.h"
#include "http_client.h"

#define CLIENTS 16
#define PER_CLIENT 5

static int port;

static void *client(void *arg) {
    int *ok = arg;
    int fd = dial(port);
    char out[1024];
    for (int i = 0; i < PER_CLIENT; i++) {
        *ok += request(fd, "POST /infer HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", out, sizeof(out)) == 200 &&
               strstr(out, "\"latency_ms\":") != NULL;
    }
    if (close(fd) != 0) {
        perror("close");
    }
    return NULL;
}

int main(void) {
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        perror("pipe");
        return 3;
    }
    struct timespec forked, listening;
    EXPECT(clock_gettime(CLOCK_MONOTONIC, &forked) == 0, "clock_gettime");
    pid_t server = fork();
    if (server == 0) {
        if (dup2(pipefd[1], STDOUT_FILENO) < 0) {
            _exit(3);
        }
        execl(EMU_SERVE, EMU_SERVE, "--port", "0", "--host", "127.0.0.1", "--batch", "8", "--max-wait-ms", "20",
              "--kernels", "4", "--blocks", "108", "--block-us", "100", "--load-ms", "300", (char *)NULL);
        _exit(3);
    }
    if (server < 0 || close(pipefd[1]) != 0) {
        perror("fork");
        return 3;
    }
    FILE *out = fdopen(pipefd[0], "r");
    if (out == NULL || fscanf(out, "listening on %d", &port) != 1) {
        fprintf(stderr, "the server did not say where it listens\n");
        return 3;
    }
    /* A lower bound only: a loaded machine makes the load longer, never shorter. */
    EXPECT(clock_gettime(CLOCK_MONOTONIC, &listening) == 0, "clock_gettime");
    double waited_ms = (listening.tv_sec - forked.tv_sec) * 1e3 + (listening.tv_nsec - forked.tv_nsec) / 1e6;
    EXPECT(waited_ms >= 300, "listening %.0f ms after the start, before its 300 ms model load", waited_ms);

    pthread_t threads[CLIENTS];
    int ok[CLIENTS] = {0};
    for (int i = 0; i < CLIENTS; i++) {
        if (pthread_create(&threads[i], NULL, client, &ok[i]) != 0) {
            perror("pthread_create");
            return 3;
        }
    }
    int answered = 0;
    for (int i = 0; i < CLIENTS; i++) {
        if (pthread_join(threads[i], NULL) != 0) {
            perror("pthread_join");
            return 3;
        }
        answered += ok[i];
    }
    EXPECT(answered == CLIENTS * PER_CLIENT, "%d of %d requests answered 200 with a latency", answered,
           CLIENTS * PER_CLIENT);

    char body[2048];
    int fd = dial(port);
    long requests = 0, batches = 0;
    EXPECT(request(fd, "GET /stats HTTP/1.1\r\n\r\n", body, sizeof(body)) == 200, "stats: %s", body);
    char *json = strstr(body, "{");
    EXPECT(json != NULL && sscanf(json, "{\"requests\":%ld,\"batches\":%ld", &requests, &batches) == 2, "stats: %s",
           body);
    EXPECT(requests == CLIENTS * PER_CLIENT, "%ld requests counted", requests);
    EXPECT(batches > 0 && batches < requests, "%ld batches for %ld requests: concurrent requests were not batched",
           batches, requests);
    /* Two requests in one write: both answered in order on the same connection, which the second closes. */
    EXPECT(send_text(fd, "GET /healthz HTTP/1.1\r\n\r\nGET /nope HTTP/1.1\r\nConnection: close\r\n\r\n") == 0,
           "pipelined requests not sent");
    size_t have = 0;
    for (ssize_t n; have + 1 < sizeof(body) && (n = recv(fd, body + have, sizeof(body) - 1 - have, 0)) > 0;) {
        have += (size_t)n;
    }
    body[have] = '\0';
    char *second = strstr(body, "HTTP/1.1 404");
    EXPECT(strncmp(body, "HTTP/1.1 200", 12) == 0 && second != NULL && strstr(second, "Connection: close") != NULL,
           "pipelined: %s", body);
    if (close(fd) != 0) {
        perror("close");
    }

    /* Hostile input: 4xx, and the server goes on. */
    char big[10000];
    memset(big, 'a', sizeof(big));
    memcpy(big, "GET /infer HTTP/1.1\r\nX: ", 24);
    memcpy(big + sizeof(big) - 5, "\r\n\r\n", 5);
    struct {
        const char *what;
        const char *text;
        int status;
    } hostile[] = {{"a head over 8 KiB", big, 431},
                   {"no request line", "garbage\r\n\r\n", 400},
                   {"a body over 1 MiB", "POST /infer HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n", 413},
                   {"a negative length", "POST /infer HTTP/1.1\r\nContent-Length: -5\r\n\r\n", 413}};
    for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
        fd = dial(port);
        int status = request(fd, hostile[i].text, body, sizeof(body));
        EXPECT(status == hostile[i].status, "%s: %d, expected %d", hostile[i].what, status, hostile[i].status);
        if (close(fd) != 0) {
            perror("close");
        }
    }
    fd = dial(port);
    EXPECT(request(fd, "POST /infer HTTP/1.0\r\n\r\n", body, sizeof(body)) == 200, "after all that: %s", body);
    if (close(fd) != 0) {
        perror("close");
    }

    int status = 0;
    if (kill(server, SIGTERM) != 0 || waitpid(server, &status, 0) != server || fclose(out) != 0) {
        perror("stopping the server");
        return 3;
    }
    printf("emu-serve: %ld requests in %ld batches; %s\n", requests, batches, failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
