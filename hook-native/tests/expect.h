/* The one assertion of the C tests: reports every failed expectation and counts it, never stops early. */
#ifndef DILU_EXPECT_H
#define DILU_EXPECT_H

#include <stdio.h>

static int failures;

#define EXPECT(cond, ...)                                        \
    do {                                                         \
        if (!(cond)) {                                           \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fputc('\n', stderr);                                 \
            failures++;                                          \
        }                                                        \
    } while (0)

#endif
