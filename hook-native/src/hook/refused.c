/*
 * Entry points that launch kernels or allocate device memory in ways the books cannot follow: refused before the
 * driver sees them (CUDA_ERROR_NOT_SUPPORTED), with one warning line each time, so that a share that was granted is
 * never left unenforced (docs/hook.md, "Every launch and allocation entry point").
 *
 * - cuLaunchCooperativeKernelMultiDevice: one call launching a grid on each of several devices, each on its own
 *   device's stream, where every other launch is charged to the calling thread's current device. Deprecated since
 *   CUDA 11.3; a cooperative launch per device (cuLaunchCooperativeKernel) is charged as usual.
 * - cuMemAlloc, cuMemAllocPitch: CUDA 2.0's 32-bit flavours. A 64-bit driver refuses them itself; refused here too so
 *   that none runs unbooked should a driver ever answer one. (cuGetProcAddress gives no flavour of theirs: interpose.c.)
 * - cuMemMapArrayAsync: maps a sparse array's tiles onto memory handles. The mapping holds the handle's memory, which
 *   vmm.c unbooks once the handle is released and unmapped from every address range: released after being mapped
 *   into an array, its memory would be held unbooked.
 * - cuMulticastCreate: a multicast object, to which memory handles are bound (cuMulticastBindMem) and which holds
 *   them as the array mappings above do.
 */
#include "hook.h"

static CUresult refuse(const char *function, const char *why) {
    hook_log(LOG_WARN, "%s is refused: %s", function, why);
    return CUDA_ERROR_NOT_SUPPORTED;
}

HOOK_EXPORT CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *list, unsigned int devices,
                                                          unsigned int flags) {
    (void)list, (void)devices, (void)flags;
    return refuse("cuLaunchCooperativeKernelMultiDevice",
                  "it launches on several devices at once (launch cuLaunchCooperativeKernel on each instead)");
}

HOOK_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *p, unsigned int bytes) {
    (void)p, (void)bytes;
    return refuse("cuMemAlloc (32-bit)", "CUDA 2.0's 32-bit allocation (use cuMemAlloc_v2)");
}

HOOK_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *p, unsigned int *pitch, unsigned int width, unsigned int height,
                                     unsigned int element) {
    (void)p, (void)pitch, (void)width, (void)height, (void)element;
    return refuse("cuMemAllocPitch (32-bit)", "CUDA 2.0's 32-bit allocation (use cuMemAllocPitch_v2)");
}

static const char SPARSE[] = "a sparse array's mappings would hold memory after its handle is released, unbooked";

HOOK_EXPORT CUresult cuMemMapArrayAsync(CUarrayMapInfo *list, unsigned int count, CUstream s) {
    (void)list, (void)count, (void)s;
    return refuse("cuMemMapArrayAsync", SPARSE);
}

HOOK_EXPORT CUresult cuMemMapArrayAsync_ptsz(CUarrayMapInfo *list, unsigned int count, CUstream s) {
    (void)list, (void)count, (void)s;
    return refuse("cuMemMapArrayAsync_ptsz", SPARSE);
}

HOOK_EXPORT CUresult cuMulticastCreate(CUmemGenericAllocationHandle *handle, const CUmulticastObjectProp *prop) {
    (void)handle, (void)prop;
    return refuse("cuMulticastCreate", "a multicast object would hold the memory bound to it after its handle is "
                                       "released, unbooked");
}
