/* The device this thread works on (context.h). */
#include "context.h"

static _Thread_local int current_device;

int emu_current_device(void) {
    return current_device;
}

void emu_set_current_device(int device) {
    current_device = device;
}
