/*
 * emu-serve takes its batch size from DILU_BATCH_SIZE, which is how the batch a profiler chose reaches a
 * served container, unless --batch is given; a bad value is refused naming the variable. The batch is seen
 * in how /infer requests are grouped: with a long --max-wait-ms a batch closes only when full, so 8
 * concurrent requests make 8 / batch batches whatever the machine's speed. Usage: serve-batch-test
 * (EMU_SERVE compiled in).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "expect.h"
#include "http_client.h"

#define REQUESTS 8

static int port;

static void *one_request(void *arg) {
    int *ok = arg;
    char out[1024];
    int fd = dial(port);
    *ok = request(fd, "POST /infer HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", out, sizeof(out)) == 200;
    if (close(fd) != 0) {
        perror("close");
    }
    return NULL;
}

/* Starts emu-serve with DILU_BATCH_SIZE=batch_env and `batch_arg` as --batch (NULL: none); REQUESTS requests at
 * once; returns the batches /stats counted. */
static long batches_of(const char *batch_env, const char *batch_arg) {
    const char *argv[24] = {EMU_SERVE, "--port", "0", "--host", "127.0.0.1", "--max-wait-ms", "60000", "--kernels", "1",
                            "--blocks", "1", "--block-us", "100", "--memory-mib", "64", "--memory-per-item-mib", "8"};
    int n = 17;
    if (batch_arg != NULL) {
        argv[n++] = "--batch";
        argv[n++] = batch_arg;
    }
    argv[n] = NULL;
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        perror("pipe");
        exit(3);
    }
    pid_t server = fork();
    if (server == 0) {
        if (dup2(pipefd[1], STDOUT_FILENO) < 0 || setenv("DILU_BATCH_SIZE", batch_env, 1) != 0) {
            _exit(3);
        }
        execv(EMU_SERVE, (char *const *)argv);
        _exit(3);
    }
    if (server < 0 || close(pipefd[1]) != 0) {
        perror("fork");
        exit(3);
    }
    FILE *out = fdopen(pipefd[0], "r");
    if (out == NULL || fscanf(out, "listening on %d", &port) != 1) {
        fprintf(stderr, "the server did not say where it listens\n");
        exit(3);
    }
    pthread_t threads[REQUESTS];
    int ok[REQUESTS] = {0}, answered = 0;
    for (int i = 0; i < REQUESTS; i++) {
        if (pthread_create(&threads[i], NULL, one_request, &ok[i]) != 0) {
            perror("pthread_create");
            exit(3);
        }
    }
    for (int i = 0; i < REQUESTS; i++) {
        if (pthread_join(threads[i], NULL) != 0) {
            perror("pthread_join");
            exit(3);
        }
        answered += ok[i];
    }
    EXPECT(answered == REQUESTS, "%d of %d requests answered", answered, REQUESTS);
    char body[2048];
    long requests = 0, batches = 0;
    int fd = dial(port);
    EXPECT(request(fd, "GET /stats HTTP/1.1\r\n\r\n", body, sizeof(body)) == 200, "stats: %s", body);
    char *json = strstr(body, "{");
    EXPECT(json != NULL && sscanf(json, "{\"requests\":%ld,\"batches\":%ld", &requests, &batches) == 2, "stats: %s", body);
    EXPECT(requests == REQUESTS, "%ld requests counted", requests);
    int status = 0;
    if (close(fd) != 0 || kill(server, SIGTERM) != 0 || waitpid(server, &status, 0) != server || fclose(out) != 0) {
        perror("stopping the server");
        exit(3);
    }
    return batches;
}

int main(void) {
    long from_env = batches_of("4", NULL);
    EXPECT(from_env == REQUESTS / 4, "DILU_BATCH_SIZE=4: %ld batches for %d requests, expected %d", from_env, REQUESTS,
           REQUESTS / 4);
    long explicit_batch = batches_of("4", "8");
    EXPECT(explicit_batch == 1, "--batch 8 beside DILU_BATCH_SIZE=4: %ld batches for %d requests, expected 1",
           explicit_batch, REQUESTS);

    char out[2048];
    const char *argv[] = {EMU_SERVE, "--port", "0", "--host", "127.0.0.1", NULL};
    const char *bad[] = {"DILU_BATCH_SIZE=0", "DILU_BATCH_SIZE=5000", "DILU_BATCH_SIZE=two", NULL};
    for (int i = 0; bad[i] != NULL; i++) {
        const char *env[] = {bad[i], NULL};
        int rc = run_child(argv, env, out, sizeof(out), NULL);
        EXPECT(rc == 2 && strstr(out, "DILU_BATCH_SIZE") != NULL && strstr(out, "1..4096") != NULL, "%s: exit %d, %s",
               bad[i], rc, out);
    }
    printf("emu-serve batch from DILU_BATCH_SIZE: %ld and %ld batches; %s\n", from_env, explicit_batch,
           failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
