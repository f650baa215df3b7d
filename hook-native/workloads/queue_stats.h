/*
 * What Knative's queue-proxy answers on its stats port, for an autoscaler that scrapes pods as Knative's
 * does: GET /metrics gives the last complete reporting period of request_stats.h, as one protobuf Stat
 * when the Accept header names application/protobuf, as Prometheus text otherwise.
 */
#ifndef DILU_QUEUE_STATS_H
#define DILU_QUEUE_STATS_H

#include "http_server.h"

/* The longest pod name Kubernetes allows (a DNS subdomain). */
#define POD_NAME_MAX 253

/* Sets the pod name every answer carries; 0, or -1 when it is empty, longer than POD_NAME_MAX, or has
 * anything but printable ASCII without spaces (a protobuf string must be UTF-8, a label value is quoted). */
int queue_stats_pod(const char *name);

/* The stats port's route. */
int queue_stats_route(int fd, const http_request *request, int keep);

#endif
