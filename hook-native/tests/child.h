/*
 * Runs a program to its end for the tests that judge a workload by what it prints and how it exits. Include
 * after defining _GNU_SOURCE.
 */
#ifndef DILU_CHILD_H
#define DILU_CHILD_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * Runs argv[0] with argv, after setting each "NAME=VALUE" of env (NULL-terminated; "NAME" alone unsets it) in
 * the child only. Its stdout and stderr, together, go to out (cut to len − 1 bytes, NUL-terminated); *wall_s,
 * when not NULL, is the host time from the start to its exit. Returns its exit status, or −1 when it did not
 * exit normally. Exits 3 when it cannot be run at all.
 */
static inline int run_child(const char *const *argv, const char *const *env, char *out, size_t len, double *wall_s) {
    int pipefd[2];
    struct timespec t0, t1;
    if (pipe(pipefd) != 0 || clock_gettime(CLOCK_MONOTONIC, &t0) != 0) {
        perror("pipe");
        exit(3);
    }
    pid_t pid = fork();
    if (pid == 0) {
        for (; env != NULL && *env != NULL; env++) {
            char name[128];
            const char *eq = strchr(*env, '=');
            size_t n = eq == NULL ? strlen(*env) : (size_t)(eq - *env);
            if (n >= sizeof(name)) {
                _exit(126);
            }
            memcpy(name, *env, n);
            name[n] = '\0';
            if ((eq == NULL ? unsetenv(name) : setenv(name, eq + 1, 1)) != 0) {
                _exit(126);
            }
        }
        if (dup2(pipefd[1], STDOUT_FILENO) < 0 || dup2(pipefd[1], STDERR_FILENO) < 0 || close(pipefd[0]) != 0) {
            _exit(126);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (pid < 0 || close(pipefd[1]) != 0) {
        perror("fork");
        exit(3);
    }
    size_t have = 0;
    char sink[512];
    for (ssize_t n; (n = read(pipefd[0], have + 1 < len ? out + have : sink,
                              have + 1 < len ? len - 1 - have : sizeof(sink))) != 0;) {
        if (n < 0) {
            perror("read");
            exit(3);
        }
        if (have + 1 < len) {
            have += (size_t)n;
        }
    }
    out[have] = '\0';
    int status = 0;
    if (close(pipefd[0]) != 0 || waitpid(pid, &status, 0) != pid || clock_gettime(CLOCK_MONOTONIC, &t1) != 0) {
        perror("waitpid");
        exit(3);
    }
    if (wall_s != NULL) {
        *wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#endif
