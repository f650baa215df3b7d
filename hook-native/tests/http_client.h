/* A blocking HTTP/1.1 client for the tests that drive a server over real sockets. Include it after defining
 * _GNU_SOURCE (for strcasestr). */
#ifndef DILU_HTTP_CLIENT_H
#define DILU_HTTP_CLIENT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A connection to 127.0.0.1:port; exits when there is none, since nothing after it could run. */
static inline int dial(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        perror("connect");
        exit(3);
    }
    return fd;
}

static inline int send_text(int fd, const char *text) {
    size_t len = strlen(text);
    while (len > 0) {
        ssize_t n = send(fd, text, len, MSG_NOSIGNAL);
        if (n <= 0) {
            return -1;
        }
        text += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads one whole response (head and Content-Length body) into out; returns its status, -1 on EOF. The body
 * may hold any bytes (body_of finds it); the head is NUL-terminated text. */
static inline int response(int fd, char *out, size_t len) {
    size_t have = 0;
    for (;;) {
        out[have] = '\0';
        char *end = strstr(out, "\r\n\r\n");
        char *cl = strcasestr(out, "Content-Length: ");
        if (end != NULL && cl != NULL && have >= (size_t)(end - out) + 4 + (size_t)atol(cl + 16)) {
            int status = 0;
            return sscanf(out, "HTTP/1.1 %d", &status) == 1 ? status : -1;
        }
        if (have + 1 >= len) {
            return -1;
        }
        ssize_t n = recv(fd, out + have, len - 1 - have, 0);
        if (n <= 0) {
            return -1;
        }
        have += (size_t)n;
    }
}

static inline int request(int fd, const char *text, char *out, size_t len) {
    return send_text(fd, text) == 0 ? response(fd, out, len) : -1;
}

/* The body of a response that response() read, and its length. */
static inline const char *body_of(const char *out, size_t *len) {
    const char *end = strstr(out, "\r\n\r\n");
    const char *cl = strcasestr(out, "Content-Length: ");
    *len = cl != NULL ? (size_t)atol(cl + 16) : 0;
    return end != NULL ? end + 4 : out;
}

#endif
