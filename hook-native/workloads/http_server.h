/*
 * A small HTTP/1.1 server for input from outside the pod, bounded everywhere: heads are capped at
 * HTTP_MAX_HEADER, bodies are read and dropped up to HTTP_MAX_BODY, a silent client is cut after the
 * server's idle time, and connections beyond its cap are refused with 503. One thread per connection,
 * keep-alive and pipelining; what a request means is left to the server's route.
 */
#ifndef DILU_HTTP_SERVER_H
#define DILU_HTTP_SERVER_H

#include <netinet/in.h>
#include <stdatomic.h>
#include <stddef.h>

#define HTTP_MAX_HEADER 8192
#define HTTP_MAX_BODY (1 << 20)

/* One request as a route sees it, its body already read and dropped. */
typedef struct http_request {
    const char *method;
    const char *path;
    const char *head; /* the whole head, NUL-terminated; for http_header */
} http_request;

/* One answer. allow: the Allow header's value, for a 405; NULL for none. */
typedef struct http_reply {
    int status;
    const char *reason;
    const char *type;
    const char *body;
    size_t len;
    const char *allow;
} http_reply;

/* Answers one request on fd; returns 0 when the connection can go on, -1 when it broke. */
typedef int (*http_route)(int fd, const http_request *request, int keep);

typedef struct http_server {
    http_route route;
    /* Also the kernel's accept queue (listen's backlog, capped by somaxconn): a flood of new connections, as a
     * backlog routed to a pod that just became ready, waits to be accepted rather than having its SYNs dropped,
     * the readiness probe's among them. */
    int max_connections;
    double idle_s;
    int listener;
    atomic_int connections; /* this listener's own: a flood on one port never starves another */
} http_server;

/* The value of the head's first header called name (case-insensitive), leading blanks skipped; NULL if none. */
const char *http_header(const char *head, const char *name);

int http_answer(int fd, const http_reply *reply, int keep);

/* A JSON answer from a NUL-terminated body. */
int http_json(int fd, int status, const char *reason, const char *body, int keep);

/* Listens on addr:port (0: any free port); returns the port bound, or -1 after saying why on stderr. */
int http_listen(http_server *server, struct in_addr addr, int port);

/* Accepts for ever (a pthread start routine): each connection gets a detached thread running the route. */
void *http_accept(void *server);

#endif
