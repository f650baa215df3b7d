/* The Java agent reads these pages by offset: any change of layout must show up here first. */
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
    expect("grant heartbeat offset", offsetof(dilu_grant_page, heartbeat_ns), 16);
    expect("grant devices count offset", offsetof(dilu_grant_page, devices), 24);
    expect("grant device[0] offset", offsetof(dilu_grant_page, device), 32);
    expect("grant period offset", offsetof(dilu_grant_page, period_us), 28);
    expect("sizeof(dilu_grant_device)", sizeof(dilu_grant_device), 48);
    expect("grant memory limit offset", offsetof(dilu_grant_device, memory_limit_bytes), 8);
    expect("grant state offset", offsetof(dilu_grant_device, state), 16);
    expect("grant throttled offset", offsetof(dilu_grant_device, throttled), 20);
    expect("grant tokens per period offset", offsetof(dilu_grant_device, tokens_per_period), 24);
    expect("grant paced until offset", offsetof(dilu_grant_device, paced_until), 32);
    expect("grant pace steps offset", offsetof(dilu_grant_device, pace_steps), 40);
    expect("grant yield offset", offsetof(dilu_grant_device, yield_us), 44);
    expect("cycle page started offset", offsetof(dilu_cycle_page, cycle_started_ns), 16);
    expect("cycle page size", sizeof(dilu_cycle_page), 24);
    expect("sizeof(dilu_grant_page)", sizeof(dilu_grant_page), 32 + 48 * DILU_MAX_DEVICES);
    expect("report device[0] offset", offsetof(dilu_report_page, device), 24);
    expect("sizeof(dilu_report_device)", sizeof(dilu_report_device), 32 + 8 * DILU_KLC_RING);
    expect("report memory refusals offset", offsetof(dilu_report_device, memory_refusals), 24);
    expect("report klc ring offset", offsetof(dilu_report_device, klc_ns), 32);
    expect("report process[0] offset", offsetof(dilu_report_page, process),
           24 + (32 + 8 * DILU_KLC_RING) * DILU_MAX_DEVICES);
    expect("sizeof(dilu_report_process)", sizeof(dilu_report_process), 8 + 8 * DILU_MAX_DEVICES);
    if (failures == 0) {
        printf("control block layout: ok\n");
    }
    return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
