/* The bounded HTTP/1.1 server of http_server.h. */
#define _GNU_SOURCE
#include "http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

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

int http_answer(int fd, const http_reply *reply, int keep) {
    char head[512];
    int n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s%sConnection: %s\r\n\r\n",
                     reply->status, reply->reason, reply->type, reply->len, reply->allow != NULL ? "Allow: " : "",
                     reply->allow != NULL ? reply->allow : "", reply->allow != NULL ? "\r\n" : "", keep ? "keep-alive" : "close");
    if (n < 0 || (size_t)n >= sizeof(head)) {
        return -1;
    }
    return send_all(fd, head, (size_t)n) == 0 && send_all(fd, reply->body, reply->len) == 0 ? 0 : -1;
}

int http_json(int fd, int status, const char *reason, const char *body, int keep) {
    http_reply reply = {.status = status, .reason = reason, .type = "application/json", .body = body, .len = strlen(body)};
    return http_answer(fd, &reply, keep);
}

const char *http_header(const char *head, const char *name) {
    size_t len = strlen(name);
    /* From the end of the request line on, so that a path cannot pose as a header. */
    for (const char *line = strstr(head, "\r\n"); line != NULL; line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, name, len) == 0 && line[2 + len] == ':') {
            const char *value = line + 3 + len;
            while (*value == ' ' || *value == '\t') {
                value++;
            }
            return value;
        }
    }
    return NULL;
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
        if (*have >= HTTP_MAX_HEADER) {
            return -2;
        }
        ssize_t n = recv(fd, buf + *have, (size_t)(HTTP_MAX_HEADER - *have), 0);
        if (n <= 0) {
            return -1;
        }
        *have += n;
    }
}

static long content_length(const char *head) {
    const char *v = http_header(head, "Content-Length");
    if (v == NULL) {
        return 0;
    }
    char *end = NULL;
    long n = strtol(v, &end, 10);
    return end == v || n < 0 ? -1 : n;
}

static void serve(int fd, const http_server *server) {
    char buf[HTTP_MAX_HEADER + 1];
    long have = 0;
    for (;;) {
        long head = read_head(fd, buf, &have);
        if (head == -2) {
            http_json(fd, 431, "Request Header Fields Too Large", "{\"error\":\"the request head exceeds 8 KiB\"}", 0);
            return;
        }
        if (head < 0) {
            return;
        }
        char after = buf[head]; /* parse only this request's head, not a pipelined one after it */
        buf[head] = '\0';
        char method[8], path[64], version[16];
        if (sscanf(buf, "%7s %63s %15s", method, path, version) != 3 || strncmp(version, "HTTP/1.", 7) != 0) {
            http_json(fd, 400, "Bad Request", "{\"error\":\"the request line must be METHOD PATH HTTP/1.x\"}", 0);
            return;
        }
        long body = content_length(buf);
        if (body < 0 || body > HTTP_MAX_BODY) {
            http_json(fd, 413, "Payload Too Large", "{\"error\":\"Content-Length must be 0..1048576\"}", 0);
            return;
        }
        int keep = strcmp(version, "HTTP/1.1") == 0 && strcasestr(buf, "\r\nConnection: close") == NULL;
        /* No route reads a body: drop it, whatever part came with the head. The rest comes from the socket
         * into a sink, so the head stays intact in buf for the route. */
        long extra = have - head;
        long skip = body < extra ? body : extra;
        for (long left = body - skip; left > 0;) {
            char sink[4096];
            ssize_t n = recv(fd, sink, (size_t)(left < (long)sizeof(sink) ? left : (long)sizeof(sink)), 0);
            if (n <= 0) {
                return;
            }
            left -= n;
        }
        http_request request = {.method = method, .path = path, .head = buf};
        int rc = server->route(fd, &request, keep);
        buf[head] = after;
        memmove(buf, buf + head + skip, (size_t)(extra - skip));
        have = extra - skip;
        if (rc != 0 || !keep) {
            return;
        }
    }
}

typedef struct connection {
    int fd;
    http_server *server;
} connection;

static void *run_connection(void *arg) {
    connection c = *(connection *)arg;
    free(arg);
    serve(c.fd, c.server);
    if (close(c.fd) != 0) {
        perror("close");
    }
    atomic_fetch_sub(&c.server->connections, 1);
    return NULL;
}

static void refuse(int fd, http_server *server) {
    http_json(fd, 503, "Service Unavailable", "{\"error\":\"too many connections\"}", 0);
    if (close(fd) != 0) {
        perror("close");
    }
    atomic_fetch_sub(&server->connections, 1);
}

int http_listen(http_server *server, struct in_addr host, int port) {
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr = host};
    socklen_t len = sizeof(addr);
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(fd, server->max_connections) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
        perror("listen");
        return -1;
    }
    server->listener = fd;
    return ntohs(addr.sin_port);
}

void *http_accept(void *arg) {
    http_server *server = arg;
    pthread_attr_t detached;
    if (pthread_attr_init(&detached) != 0 || pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED) != 0 ||
        pthread_attr_setstacksize(&detached, 256 * 1024) != 0) {
        perror("pthread_attr");
        exit(3);
    }
    double idle_s = server->idle_s;
    struct timeval idle = {.tv_sec = (time_t)idle_s, .tv_usec = (suseconds_t)((idle_s - (double)(time_t)idle_s) * 1e6)};
    for (;;) {
        int fd = accept4(server->listener, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EINTR && errno != ECONNABORTED) {
                perror("accept");
            }
            continue;
        }
        if (atomic_fetch_add(&server->connections, 1) >= server->max_connections ||
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof(idle)) != 0) {
            refuse(fd, server);
            continue;
        }
        connection *c = malloc(sizeof(*c));
        pthread_t t;
        if (c == NULL) {
            refuse(fd, server);
            continue;
        }
        *c = (connection){.fd = fd, .server = server};
        if (pthread_create(&t, &detached, run_connection, c) != 0) {
            free(c);
            refuse(fd, server);
        }
    }
    return NULL;
}
