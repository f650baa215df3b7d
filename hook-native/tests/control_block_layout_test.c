/* The Java side reads these pages by offset: any change of layout must show up here first. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "dilu_control.h"

static int failures = 0;

static void expect(const char *what, size_t actual, size_t wanted) {
    if (actual != wanted) {
        fprintf(stderr, "FAIL %s: %zu, expected %zu\n", what, actual, wanted);
        failures++;
    }
}

int main(void) {
    expect("sizeof(dilu_header)", sizeof(dilu_header), 16);
    expect("grant epoch offset", offsetof(dilu_grant_page, epoch), 16);
    expect("grant devices offset", offsetof(dilu_grant_page, devices), 24);
    expect("sizeof(dilu_grant_device)", sizeof(dilu_grant_device), 24);
    expect("sizeof(dilu_grant_page)", sizeof(dilu_grant_page), 24 + 24 * DILU_MAX_DEVICES);
    expect("report devices offset", offsetof(dilu_report_page, devices), 24);
    expect("sizeof(dilu_report_device)", sizeof(dilu_report_device), 24 + 8 * DILU_KLC_RING);
    if (failures == 0) {
        printf("control block layout: ok\n");
    }
    return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
