/*
 * dilu-nvml-probe: measures on a real GPU what the node agent's backstop reads through NVML
 * (docs/node-agent.md, "The backstop"), so that its bounds rest on numbers, not guesses:
 *
 *   - the GPU memory NVML reports (nvmlDeviceGetComputeRunningProcesses_v3) for a process holding only a CUDA
 *     context, and for one that also allocated 1024 MiB: what the driver's own context costs per process;
 *   - the per-process SM utilisation samples (nvmlDeviceGetProcessUtilization) of a process running one-block
 *     kernels back to back, of one running kernels that fill the GPU, and of one filling it a quarter of the
 *     time: how far apart samples are, and whether the figure is a share of time or of SMs.
 *
 * Both libraries are opened with dlopen, so the probe builds without NVIDIA's headers; the structures are
 * declared as NVML's reference documents them, and each read is checked against the pids it must contain.
 * Test and measurement tool: it is not shipped in images.
 *
 *   dilu-nvml-probe [seconds]      (default 6 s of utilisation samples)
 *   dilu-nvml-probe --hold         the same five processes, each announced as "HOLD role=N pid=P" once all are
 *                                  ready, kept until standard input closes: for the node agent's own NVML reader to
 *                                  read (NvmlBackstopCheck, run by the packed GPU check)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* nvmlProcessInfo_t (the _v2/_v3 calls) and nvmlProcessUtilizationSample_t, as NVML's reference gives them. */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} process_info;

typedef struct {
    unsigned int pid;
    unsigned long long timeStamp; /* CPU time, µs */
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} utilization_sample;

/* A kernel that spins for a number of clock cycles (nvcc -ptx of a clock64() loop). */
static const char SPIN_PTX[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry spin(.param .u64 cycles)\n{\n"
    "  .reg .pred %p<2>;\n  .reg .b64 %rd<6>;\n"
    "  ld.param.u64 %rd2, [cycles];\n  mov.u64 %rd3, %clock64;\n"
    "L1:\n  mov.u64 %rd4, %clock64;\n  sub.s64 %rd5, %rd4, %rd3;\n  setp.lt.s64 %p1, %rd5, %rd2;\n"
    "  @%p1 bra L1;\n  ret;\n}\n";

typedef int (*cu_fn)();
static void *cuda;

static cu_fn cu(const char *name) {
    cu_fn f = (cu_fn)dlsym(cuda, name);
    if (f == NULL) {
        fprintf(stderr, "libcuda has no %s\n", name);
        _exit(3);
    }
    return f;
}

#define CU(call)                                                                \
    do {                                                                        \
        int rc_ = (call);                                                       \
        if (rc_ != 0) {                                                         \
            fprintf(stderr, "%s failed with CUDA error %d\n", #call, rc_);      \
            _exit(3);                                                           \
        }                                                                       \
    } while (0)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

enum role { IDLE, ALLOC, NARROW, WIDE, QUARTER, ROLES };
static const char *ROLE_NAMES[] = {"context-only", "context+1024MiB", "narrow-1-block", "wide-full-gpu",
                                   "wide-25%-of-time"};

/* One child: a context, then what its role says, until the parent kills it. */
static void child(enum role role, int ready_fd) {
    cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (cuda == NULL) {
        fprintf(stderr, "no libcuda.so.1: %s\n", dlerror());
        _exit(3);
    }
    int dev = 0, sms = 0, clock_khz = 0;
    void *ctx = NULL, *module = NULL, *spin = NULL;
    unsigned long long ptr = 0;
    CU(cu("cuInit")(0));
    CU(cu("cuDeviceGet")(&dev, 0));
    CU(cu("cuDevicePrimaryCtxRetain")(&ctx, dev));
    CU(cu("cuCtxSetCurrent")(ctx));
    CU(cu("cuDeviceGetAttribute")(&sms, 16 /* MULTIPROCESSOR_COUNT */, dev));
    CU(cu("cuDeviceGetAttribute")(&clock_khz, 13 /* CLOCK_RATE */, dev));
    if (role == ALLOC) {
        CU(cu("cuMemAlloc_v2")(&ptr, (size_t)1024 << 20));
    }
    if (role >= NARROW) {
        CU(cu("cuModuleLoadData")(&module, SPIN_PTX));
        CU(cu("cuModuleGetFunction")(&spin, module, "spin"));
    }
    char ok = 1;
    /* Closed once written, so that the parent reads the end of the pipe, not a hang, when a child fails first. */
    if (write(ready_fd, &ok, 1) != 1 || close(ready_fd) != 0) {
        _exit(3);
    }
    long long cycles = (long long)clock_khz * 2; /* 2 ms a kernel */
    void *args[] = {&cycles};
    unsigned blocks = role == NARROW ? 1 : (unsigned)sms * 4;
    for (;;) {
        if (role < NARROW) {
            pause();
            continue;
        }
        CU(cu("cuLaunchKernel")(spin, blocks, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
        CU(cu("cuCtxSynchronize")());
        if (role == QUARTER) {
            struct timespec rest = {0, 6 * 1000 * 1000}; /* 2 ms of kernel, 6 ms of rest */
            nanosleep(&rest, NULL);
        }
    }
}

/* Ends the first n children. */
static void end_children(const pid_t *pids, int n) {
    for (int r = 0; r < n; r++) {
        if (kill(pids[r], SIGKILL) != 0 || waitpid(pids[r], NULL, 0) < 0) {
            perror("ending a child");
        }
    }
}

/* Announces the children, then holds them until standard input closes (or fails); ends them either way. */
static int hold(const pid_t *pids) {
    for (int r = 0; r < ROLES; r++) {
        printf("HOLD role=%d pid=%d name=%s\n", r, (int)pids[r], ROLE_NAMES[r]);
    }
    if (fflush(stdout) != 0) {
        perror("stdout");
    }
    char buf[64];
    while (read(0, buf, sizeof(buf)) > 0) {
    }
    end_children(pids, ROLES);
    return 0;
}

int main(int argc, char **argv) {
    int holding = argc > 1 && strcmp(argv[1], "--hold") == 0;
    double seconds = argc > 1 && !holding ? atof(argv[1]) : 6;
    if (!holding && argc > 1 && !(seconds > 0)) {
        fprintf(stderr, "usage: dilu-nvml-probe [SECONDS > 0] | --hold\n");
        return 2;
    }
    pid_t pids[ROLES];
    int ready[2];
    if (pipe(ready) != 0) {
        perror("pipe");
        return 3;
    }
    for (int r = 0; r < ROLES; r++) {
        pids[r] = fork();
        if (pids[r] < 0) {
            perror("fork");
            end_children(pids, r);
            return 3;
        }
        if (pids[r] == 0) {
            child((enum role)r, ready[1]);
        }
    }
    if (close(ready[1]) != 0) {
        perror("close");
        end_children(pids, ROLES);
        return 3;
    }
    for (int r = 0; r < ROLES; r++) {
        char c;
        if (read(ready[0], &c, 1) != 1) {
            fprintf(stderr, "a child failed before it was ready\n");
            end_children(pids, ROLES);
            return 3;
        }
    }
    if (holding) {
        return hold(pids);
    }
    void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (nvml == NULL) {
        fprintf(stderr, "no libnvidia-ml.so.1: %s\n", dlerror());
        end_children(pids, ROLES);
        return 3;
    }
    int (*init)(void) = (int (*)(void))dlsym(nvml, "nvmlInit_v2");
    int (*handle)(unsigned, void **) = (int (*)(unsigned, void **))dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2");
    int (*procs)(void *, unsigned *, process_info *) =
        (int (*)(void *, unsigned *, process_info *))dlsym(nvml, "nvmlDeviceGetComputeRunningProcesses_v3");
    int (*util)(void *, utilization_sample *, unsigned *, unsigned long long) =
        (int (*)(void *, utilization_sample *, unsigned *, unsigned long long))dlsym(nvml, "nvmlDeviceGetProcessUtilization");
    void *device = NULL;
    if (init == NULL || handle == NULL || procs == NULL || util == NULL || init() != 0 || handle(0, &device) != 0) {
        fprintf(stderr, "NVML: an entry point is missing or failed\n");
        end_children(pids, ROLES);
        return 3;
    }
    sleep(2);
    process_info info[64];
    unsigned count = 64;
    int rc = procs(device, &count, info);
    printf("sizeof(process_info)=%zu sizeof(utilization_sample)=%zu\n", sizeof(process_info), sizeof(utilization_sample));
    printf("nvmlDeviceGetComputeRunningProcesses_v3: rc=%d, %u process(es)\n", rc, count);
    for (unsigned i = 0; i < count && rc == 0; i++) {
        const char *name = "another process";
        for (int r = 0; r < ROLES; r++) {
            name = (unsigned)pids[r] == info[i].pid ? ROLE_NAMES[r] : name;
        }
        printf("MEMORY pid=%u role=%s used_mib=%.1f gi=%u ci=%u\n", info[i].pid, name,
               info[i].usedGpuMemory / 1048576.0, info[i].gpuInstanceId, info[i].computeInstanceId);
    }
    /* Samples: every 250 ms, those newer than the last seen. */
    unsigned long long last = 0;
    double sum[ROLES] = {0}, first_ts[ROLES] = {0}, last_ts[ROLES] = {0};
    int n[ROLES] = {0};
    double end = now_s() + seconds;
    while (now_s() < end) {
        utilization_sample samples[256];
        unsigned got = 256;
        rc = util(device, samples, &got, last);
        if (rc == 0) {
            for (unsigned i = 0; i < got; i++) {
                for (int r = 0; r < ROLES; r++) {
                    if ((unsigned)pids[r] == samples[i].pid) {
                        printf("SAMPLE role=%s ts_us=%llu sm=%u mem=%u\n", ROLE_NAMES[r], samples[i].timeStamp,
                               samples[i].smUtil, samples[i].memUtil);
                        sum[r] += samples[i].smUtil;
                        if (n[r]++ == 0) {
                            first_ts[r] = (double)samples[i].timeStamp;
                        }
                        last_ts[r] = (double)samples[i].timeStamp;
                    }
                }
                last = samples[i].timeStamp > last ? samples[i].timeStamp : last;
            }
        } else if (rc != 6 /* NVML_ERROR_NOT_FOUND: no new samples */) {
            printf("nvmlDeviceGetProcessUtilization: rc=%d\n", rc);
        }
        struct timespec pause_ts = {0, 250 * 1000 * 1000};
        nanosleep(&pause_ts, NULL);
    }
    for (int r = 0; r < ROLES; r++) {
        printf("UTIL role=%s samples=%d mean_sm=%.1f mean_spacing_ms=%.1f\n", ROLE_NAMES[r], n[r],
               n[r] ? sum[r] / n[r] : 0, n[r] > 1 ? (last_ts[r] - first_ts[r]) / (n[r] - 1) / 1000.0 : 0);
    }
    end_children(pids, ROLES);
    return 0;
}
