/* stat_pb.h: keys and int64 as base-128 varints, doubles as 8 bytes little-endian, the string with its
 * length in front. */
#include "stat_pb.h"

#include <string.h>

enum { VARINT = 0, FIXED64 = 1, LENGTH_DELIMITED = 2 };

typedef struct writer {
    uint8_t *out;
    size_t cap, len;
    int overflow;
} writer;

static void put(writer *w, uint8_t byte) {
    if (w->len < w->cap) {
        w->out[w->len++] = byte;
    } else {
        w->overflow = 1;
    }
}

static void varint(writer *w, uint64_t v) {
    while (v >= 0x80) {
        put(w, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    put(w, (uint8_t)v);
}

static void key(writer *w, unsigned field, unsigned type) {
    varint(w, (uint64_t)field << 3 | type);
}

static void fixed_double(writer *w, unsigned field, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits)); /* IEEE 754 binary64, as the wire format's double */
    key(w, field, FIXED64);
    for (int i = 0; i < 8; i++) {
        put(w, (uint8_t)(bits >> (8 * i))); /* little-endian whatever the host's order */
    }
}

size_t stat_pb_encode(const knative_stat *s, uint8_t *out, size_t cap) {
    writer w = {.out = out, .cap = cap};
    size_t name = strlen(s->pod_name);
    key(&w, 1, LENGTH_DELIMITED);
    varint(&w, name);
    for (size_t i = 0; i < name; i++) {
        put(&w, (uint8_t)s->pod_name[i]);
    }
    fixed_double(&w, 2, s->average_concurrent_requests);
    fixed_double(&w, 3, s->average_proxied_concurrent_requests);
    fixed_double(&w, 4, s->request_count);
    fixed_double(&w, 5, s->proxied_request_count);
    fixed_double(&w, 6, s->process_uptime);
    key(&w, 7, VARINT);
    varint(&w, (uint64_t)s->timestamp); /* int64: a negative one is its two's complement, ten bytes */
    return w.overflow ? 0 : w.len;
}
