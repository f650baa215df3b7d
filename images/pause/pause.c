/*
 * The pod sandbox's only process: it holds the pod's namespaces open, reaps what is re-parented to it and
 * exits on SIGTERM or SIGINT. As PID 1 a process ignores signals it has no handler for, so a plain `sleep`
 * would make every pod deletion wait out its grace period.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
    (void)sig;
    _exit(0);
}

static void reap(int sig) {
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    struct sigaction on_stop = {.sa_handler = stop};
    struct sigaction on_child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
    if (sigaction(SIGTERM, &on_stop, NULL) != 0 || sigaction(SIGINT, &on_stop, NULL) != 0 ||
        sigaction(SIGCHLD, &on_child, NULL) != 0) {
        return EXIT_FAILURE;
    }
    for (;;) {
        pause();
    }
}
