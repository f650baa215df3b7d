/* The steps every part of dilu-contain takes (steps.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "steps.h"

void contain_die(const char *what) {
    fprintf(stderr, "dilu-contain: %s: %s\n", what, strerror(errno));
    exit(125);
}

void contain_write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        contain_die(path);
    }
    size_t n = strlen(text);
    if (write(fd, text, n) != (ssize_t)n || close(fd) != 0) {
        contain_die(path);
    }
}

void contain_mkdirs(const char *path) {
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p != '\0'; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
                contain_die(buf);
            }
            *p = '/';
        }
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
        contain_die(buf);
    }
}

void contain_map_root(uid_t uid, gid_t gid) {
    char map[64];
    contain_write_file("/proc/self/setgroups", "deny");
    snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
    contain_write_file("/proc/self/uid_map", map);
    snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
    contain_write_file("/proc/self/gid_map", map);
}
