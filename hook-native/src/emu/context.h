/* The device this thread works on: the emulator's one piece of context state, apart so that every module can read it
 * without depending on the driver API that sets it. */
#ifndef DILU_EMU_CONTEXT_H
#define DILU_EMU_CONTEXT_H

int emu_current_device(void);
void emu_set_current_device(int device);

#endif
