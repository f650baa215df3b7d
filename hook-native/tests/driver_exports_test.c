/*
 * Every entry point of the CUDA driver that launches kernels or allocates device memory is the hook's, however it is
 * reached: wrapped (charged, booked) or refused. The entry points are the toolkit's (cuda_driver_exports.txt, written
 * by tools/cuda-driver-exports.sh); which of them launch or allocate is decided by name, by the rule below, so that a
 * new toolkit's list with a new such name fails here until the hook answers it.
 *
 * Run with the hook preloaded over the emulated driver, as a program linked against libcuda runs. For each exported
 * name the rule picks, the hook must define it (what such a program binds to) and dlsym on the driver's handle must
 * answer the hook's function; for each cuGetProcAddress flavour the rule picks, cuGetProcAddress must answer the
 * hook's function or refuse the flavour (CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT). The
 * emulated driver exports and answers every one of them, so a missing wrapper shows as the driver's own function.
 *
 * Usage: driver-exports-test LIST HOOK_LIB
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dilu_cuda.h"
#include "expect.h"

/*
 * The rule, on the name without its flavour suffixes (_ptsz, _ptds, then _v<N>): it launches kernels, decides what a
 * launch runs, or allocates device memory. Left out, and why (docs/hook.md, "Every launch and allocation entry point"):
 * cuLaunchHostFunc runs a host function; cuMemAllocHost, cuMemHostAlloc and cuMemHostRegister take host memory (the
 * container's memory cgroup bounds it); cuMemPool* configure pools whose memory comes from cuMemAllocAsync and
 * cuMemAllocFromPoolAsync; imports (cuIpcOpenMemHandle, cuMemImportFromShareableHandle, cuMemPoolImportPointer,
 * cuImportExternalMemory) map memory another process or API allocated; a context's own memory, a module's globals and
 * the device heap (cuCtxCreate, cuModuleLoad*, cuLibraryLoad*, cuCtxSetLimit) are the backstop's, which counts them as
 * the GPU reports them.
 */
static const char *const PICKED[] = {
    "^cuLaunch",                                     /* every launch, CUDA 2.0's to cuLaunchKernelEx */
    "^cuGraphLaunch$",                               /* graph launches */
    "^cuGraphInstantiate",                           /* what an executable graph runs: made */
    "^cuGraphExecUpdate$",                           /*   changed whole */
    "^cuGraphExec(Kernel|ChildGraph)?NodeSetParams$", /*   changed node by node */
    "^cuMemAlloc",                                   /* device memory, every allocator */
    "^cuMemCreate$",                                 /* virtual memory management: physical memory */
    "^cuMemMap",                                     /*   and what holds it mapped */
    "^cuArray(3D)?Create$",                          /* arrays */
    "^cuMipmappedArrayCreate$",
    "^cuGraphAdd(MemAlloc)?Node$",                   /* graph nodes that allocate when launched */
    "^cuMulticastCreate$",                           /* multicast objects, which hold the memory bound to them */
    NULL};
static const char *const LEFT_OUT[] = {"^cuLaunchHostFunc$", "^cuMemAllocHost$", NULL};

static regex_t picked[sizeof(PICKED) / sizeof(PICKED[0])], left_out[sizeof(LEFT_OUT) / sizeof(LEFT_OUT[0])];

static void compile(const char *const *patterns, regex_t *out) {
    for (size_t i = 0; patterns[i] != NULL; i++) {
        if (regcomp(&out[i], patterns[i], REG_EXTENDED | REG_NOSUB) != 0) {
            fprintf(stderr, "bad pattern %s\n", patterns[i]);
            exit(2);
        }
    }
}

static int matches(const char *const *patterns, regex_t *compiled, const char *name) {
    for (size_t i = 0; patterns[i] != NULL; i++) {
        if (regexec(&compiled[i], name, 0, NULL, 0) == 0) {
            return 1;
        }
    }
    return 0;
}

static int ends_with(const char *s, size_t len, const char *suffix) {
    size_t n = strlen(suffix);
    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* The name without _ptsz/_ptds and then _v<N>. */
static void base_of(const char *name, char *out, size_t out_len) {
    snprintf(out, out_len, "%s", name);
    size_t len = strlen(out);
    if (ends_with(out, len, "_ptsz") || ends_with(out, len, "_ptds")) {
        len -= 5;
    }
    size_t digits = len;
    while (digits > 0 && out[digits - 1] >= '0' && out[digits - 1] <= '9') {
        digits--;
    }
    if (digits < len && digits >= 2 && out[digits - 1] == 'v' && out[digits - 2] == '_') {
        len = digits - 2;
    }
    out[len] = '\0';
}

static int launches_or_allocates(const char *name) {
    char base[256];
    base_of(name, base, sizeof(base));
    return matches(PICKED, picked, base) && !matches(LEFT_OUT, left_out, base);
}

static const void *hook_base;

static int in_hook(const void *f) {
    Dl_info info;
    return f != NULL && dladdr(f, &info) != 0 && info.dli_fbase == hook_base;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: driver-exports-test LIST HOOK_LIB\n");
        return 2;
    }
    compile(PICKED, picked);
    compile(LEFT_OUT, left_out);
    void *hook = dlopen(argv[2], RTLD_NOW | RTLD_NOLOAD);
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    Dl_info info;
    void *known = hook != NULL ? dlsym(hook, "cuLaunchKernel") : NULL;
    if (hook == NULL || driver == NULL || known == NULL || dladdr(known, &info) == 0) {
        fprintf(stderr, "the hook must be preloaded and the driver loadable (%s)\n", dlerror());
        return 2;
    }
    hook_base = info.dli_fbase;
    FILE *list = fopen(argv[1], "r");
    if (list == NULL) {
        perror(argv[1]);
        return 2;
    }
    char line[512];
    int symbols = 0, flavours = 0, refused = 0, entries = 0;
    while (fgets(line, sizeof(line), list) != NULL) {
        char kind[16], name[256], flavour[16];
        int version;
        if (line[0] == '#' || line[0] == '\n') {
            continue;
        }
        entries++;
        if (sscanf(line, "symbol %255s", name) == 1) {
            if (!launches_or_allocates(name)) {
                continue;
            }
            symbols++;
            EXPECT(in_hook(dlsym(hook, name)), "the hook does not define %s: a program linked against libcuda calls "
                                               "the driver's", name);
            void *answered = dlsym(driver, name);
            EXPECT(answered != NULL, "the emulated driver does not export %s: add it, so that the hook's answer for it "
                                     "is checked", name);
            EXPECT(answered == NULL || in_hook(answered), "dlsym(libcuda, \"%s\") answers the driver's own function",
                   name);
        } else if (sscanf(line, "%15s %255s %d %15s", kind, name, &version, flavour) == 4 &&
                   strcmp(kind, "proc") == 0) {
            if (!launches_or_allocates(name)) {
                continue;
            }
            flavours++;
            cuuint64_t flags = strcmp(flavour, "ptsz") == 0 ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                                            : CU_GET_PROC_ADDRESS_DEFAULT;
            void *p = NULL;
            CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
            CUresult rc = cuGetProcAddress_v2(name, &p, version, flags, &status);
            int refusal = rc == CUDA_ERROR_NOT_FOUND && status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT && p == NULL;
            refused += refusal;
            EXPECT(status != CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, "the emulated driver does not answer "
                   "cuGetProcAddress(\"%s\", %d): add it, so that the hook's answer for it is checked", name, version);
            EXPECT(refusal || (rc == CUDA_SUCCESS && in_hook(p)), "cuGetProcAddress(\"%s\", %d, %s) answers %d with "
                   "the driver's own function", name, version, flavour, (int)rc);
        } else {
            EXPECT(0, "%s: a line that is neither symbol nor proc: %s", argv[1], line);
        }
    }
    if (fclose(list) != 0) {
        perror(argv[1]);
        return 2;
    }
    EXPECT(entries > 1000 && symbols > 40 && flavours > 40, "%s holds too little: %d entries, %d and %d picked",
           argv[1], entries, symbols, flavours);
    printf("%d of %d driver entry points launch or allocate: %d exported names and %d cuGetProcAddress flavours, every "
           "one the hook's (%d flavours refused as older than any it answers with)\n",
           symbols + flavours, entries, symbols, flavours, refused);
    return failures == 0 ? 0 : 1;
}
