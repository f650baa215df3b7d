/* queue_stats.h. Names and meanings as queue-proxy's (knative.dev/serving pkg/queue): rates per second of a
 * 1 s reporting period, no request proxied since no activator sits in front of this server. */
#define _GNU_SOURCE
#include "queue_stats.h"

#include <stdio.h>
#include <string.h>

#include "request_stats.h"
#include "stat_pb.h"

static char pod[POD_NAME_MAX + 1];

int queue_stats_pod(const char *name) {
    size_t len = strlen(name);
    if (len == 0 || len > POD_NAME_MAX) {
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        if (name[i] <= ' ' || name[i] > '~') {
            return -1;
        }
    }
    memcpy(pod, name, len + 1);
    return 0;
}

static knative_stat current(void) {
    request_report r = request_stats_report();
    /* Nothing reaches this server through an activator: proxied counts stay 0, so that an autoscaler taking
     * request_count - proxied_request_count (as Knative's and StatScraper do) counts each request once. */
    return (knative_stat){.pod_name = pod,
                          .average_concurrent_requests = r.average_concurrency,
                          .average_proxied_concurrent_requests = 0,
                          .request_count = r.requests,
                          .proxied_request_count = 0,
                          /* at the period's end, as queue-proxy takes it when the period is reported */
                          .process_uptime = r.uptime_s,
                          /* queue-proxy leaves it 0 and no autoscaler reads it; the period's end is what it
                           * would mean */
                          .timestamp = r.unix_s};
}

static int protobuf(int fd, int keep) {
    knative_stat s = current();
    uint8_t body[512]; /* a Stat with a POD_NAME_MAX name takes 312 bytes */
    size_t len = stat_pb_encode(&s, body, sizeof(body));
    if (len == 0) {
        http_json(fd, 500, "Internal Server Error", "{\"error\":\"the stat did not fit\"}", 0);
        return -1;
    }
    http_reply reply = {.status = 200, .reason = "OK", .type = "application/protobuf", .body = (const char *)body,
                        .len = len};
    return http_answer(fd, &reply, keep);
}

/* The pod name as a label value: the name holds no newline (queue_stats_pod), so only \ and " are escaped. */
static void label(char *out, const char *name) {
    for (; *name != '\0'; name++) {
        if (*name == '\\' || *name == '"') {
            *out++ = '\\';
        }
        *out++ = *name;
    }
    *out = '\0';
}

static int text(int fd, int keep) {
    knative_stat s = current();
    char name[2 * POD_NAME_MAX + 1];
    label(name, s.pod_name);
    const struct {
        const char *metric, *help;
        double value;
    } gauges[] = {
        {"queue_requests_per_second", "Requests that arrived in the last complete 1 s reporting period, per second",
         s.request_count},
        {"queue_proxied_operations_per_second", "Of those, the requests proxied by an activator (none here)",
         s.proxied_request_count},
        {"queue_average_concurrent_requests", "Requests in flight, averaged over the same period's time",
         s.average_concurrent_requests},
        {"queue_average_proxied_concurrent_requests", "Of those, the proxied ones (none here)",
         s.average_proxied_concurrent_requests},
        {"process_uptime", "Seconds from the start to the end of that period", s.process_uptime},
    };
    char body[8192]; /* five gauges of under 800 bytes each with a POD_NAME_MAX name of quotes, all escaped */
    size_t len = 0;
    for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++) {
        /* %.17g: the same double as the protobuf answer, to the last bit */
        int n = snprintf(body + len, sizeof(body) - len, "# HELP %s %s.\n# TYPE %s gauge\n%s{destination_pod=\"%s\"} %.17g\n",
                         gauges[i].metric, gauges[i].help, gauges[i].metric, gauges[i].metric, name, gauges[i].value);
        if (n < 0 || (size_t)n >= sizeof(body) - len) {
            http_json(fd, 500, "Internal Server Error", "{\"error\":\"the metrics did not fit\"}", 0);
            return -1;
        }
        len += (size_t)n;
    }
    http_reply reply = {.status = 200, .reason = "OK", .type = "text/plain; version=0.0.4; charset=utf-8", .body = body,
                        .len = len};
    return http_answer(fd, &reply, keep);
}

/* As queue-proxy decides: the protobuf Stat when the (first) Accept header names its media type. Media types
 * are case-insensitive, so this matches whatever case a client writes. */
static int wants_protobuf(const char *head) {
    const char *accept = http_header(head, "Accept");
    if (accept == NULL) {
        return 0;
    }
    const char *end = strstr(accept, "\r\n");
    const char *found = strcasestr(accept, "application/protobuf");
    return found != NULL && (end == NULL || found < end);
}

int queue_stats_route(int fd, const http_request *request, int keep) {
    if (strcmp(request->path, "/metrics") != 0) {
        return http_json(fd, 404, "Not Found", "{\"error\":\"GET /metrics is all this port serves\"}", keep);
    }
    if (strcmp(request->method, "GET") != 0) {
        static const char only_get[] = "{\"error\":\"GET /metrics\"}";
        http_reply reply = {.status = 405, .reason = "Method Not Allowed", .type = "application/json", .body = only_get,
                            .len = sizeof(only_get) - 1, .allow = "GET"};
        return http_answer(fd, &reply, keep);
    }
    return wants_protobuf(request->head) ? protobuf(fd, keep) : text(fd, keep);
}
