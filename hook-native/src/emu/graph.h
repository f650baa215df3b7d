/* Graphs and stream capture: a kernel launched onto a capturing stream becomes a node of its graph instead of running. */
#ifndef DILU_EMU_GRAPH_H
#define DILU_EMU_GRAPH_H

#include <stddef.h>

#include "dilu_cuda.h"

extern _Atomic int emu_capturing_streams; /* streams capturing now in this process: launches check only if > 0 */
int emu_capture_kernel(CUstream s, CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, CUresult *rc);
/* cuMemAllocAsync / cuMemFreeAsync on a capturing stream: 1 with the result in *rc if s captures (a memory
 * node recorded, or refused), 0 if it does not and the call is to run now. */
int emu_capture_alloc(CUstream s, size_t bytes, CUdeviceptr *dptr, CUresult *rc);
int emu_capture_free(CUstream s, CUdeviceptr p, CUresult *rc);
void emu_capture_abandon(CUstream s); /* a stream destroyed while capturing: its capture ends */

#endif
