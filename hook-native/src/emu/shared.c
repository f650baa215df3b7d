/* The emulated GPU's state, shared by every process through one mapped file. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dilu_emu.h"
#include "shared.h"

/* The slots' layout as the node agent reads it (device-plugin: gpu/EmulatedGpuProcesses): fixed-width fields at
 * fixed offsets; the header says where the slots start and how long each is. */
_Static_assert(offsetof(emu_shared, procs_offset) == 32 && offsetof(emu_shared, max_devices) == 44,
               "the header the node agent reads");
_Static_assert(offsetof(emu_proc, pid) == 0 && offsetof(emu_proc, memory) == 40 &&
                   offsetof(emu_proc, start_ticks) == 104 && offsetof(emu_proc, blocks) == 112 &&
                   sizeof(emu_proc) == 176 && EMU_MAX_DEVICES == 8,
               "the process slot the node agent reads");

static pthread_once_t once = PTHREAD_ONCE_INIT;
static emu_shared *state;
static emu_proc *self;
static int log_enabled = 1;

void emu_log(const char *fmt, ...) {
    if (!log_enabled) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    fputs("dilu-emu: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

uint64_t emu_now_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        return 0;
    }
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void emu_sleep_until(uint64_t deadline_ns) {
    struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000ull),
                          .tv_nsec = (long)(deadline_ns % 1000000000ull)};
    int rc;
    do {
        rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    } while (rc == EINTR);
}

static long env_long(const char *name, long fallback, long min, long max) {
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') {
        return fallback;
    }
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || x < min || x > max) {
        emu_log("%s=%s is not allowed: must be an integer in %ld..%ld; using %ld", name, v, min, max, fallback);
        return fallback;
    }
    return x;
}

static uint32_t sharing_from_env(void) {
    const char *v = getenv("DILU_EMU_SHARING");
    if (v == NULL || *v == '\0' || strcmp(v, "fifo") == 0) {
        return DILU_EMU_FIFO;
    }
    if (strcmp(v, "timeslice") == 0) {
        return DILU_EMU_TIMESLICE;
    }
    if (strcmp(v, "proportional") == 0) {
        return DILU_EMU_PROPORTIONAL;
    }
    emu_log("DILU_EMU_SHARING=%s is not allowed: must be fifo, timeslice or proportional; using fifo", v);
    return DILU_EMU_FIFO;
}

/* Returns 0 on success; the device's lock survives the death of a process holding it. */
static int init_lock(pthread_mutex_t *lock) {
    pthread_mutexattr_t a;
    int rc = pthread_mutexattr_init(&a);
    if (rc == 0) {
        rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        if (rc == 0) {
            rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
        }
        if (rc == 0) {
            rc = pthread_mutex_init(lock, &a);
        }
        if (pthread_mutexattr_destroy(&a) != 0 && rc == 0) {
            rc = EINVAL;
        }
    }
    return rc;
}

static int initialise(emu_shared *s) {
    long devices = env_long("DILU_EMU_GPUS", 1, 1, EMU_MAX_DEVICES);
    long sms = env_long("DILU_EMU_SMS", 108, 1, EMU_MAX_SMS);
    long per_sm = env_long("DILU_EMU_BLOCKS_PER_SM", 1, 1, EMU_MAX_BLOCKS_PER_SM);
    long mib = env_long("DILU_EMU_MEMORY_MIB", 40960, 1, 16L * 1024 * 1024);
    long slice_us = env_long("DILU_EMU_TIMESLICE_US", 2000, 100, 1000000);
    const char *model = getenv("DILU_EMU_MODEL");
    memset(s, 0, sizeof(*s));
    s->magic = EMU_MAGIC;
    s->version = EMU_VERSION;
    s->size = sizeof(*s);
    s->devices = (uint32_t)devices;
    s->sharing = sharing_from_env();
    s->timeslice_ns = (uint64_t)slice_us * 1000;
    s->procs_offset = (uint32_t)offsetof(emu_shared, procs);
    s->proc_size = (uint32_t)sizeof(emu_proc);
    s->max_procs = EMU_MAX_PROCS;
    s->max_devices = EMU_MAX_DEVICES;
    for (long i = 0; i < devices; i++) {
        s->dev[i].sms = (uint32_t)sms;
        s->dev[i].slots = (uint32_t)(sms * per_sm);
        s->dev[i].memory_total = (uint64_t)mib * 1024 * 1024;
        snprintf(s->dev[i].name, sizeof(s->dev[i].name), "%s",
                 model != NULL && *model != '\0' ? model : "Emulated A100-SXM4-40GB");
        int rc = init_lock(&s->dev[i].lock);
        if (rc != 0) {
            emu_log("cannot create the lock of emulated GPU %ld: %s", i, strerror(rc));
            return -1;
        }
    }
    atomic_store(&s->ready, 1);
    return 0;
}

static int valid(const emu_shared *s) {
    if (s->magic != EMU_MAGIC || s->version != EMU_VERSION || s->size != sizeof(*s) || s->devices < 1 ||
        s->devices > EMU_MAX_DEVICES || s->sharing > DILU_EMU_PROPORTIONAL ||
        s->procs_offset != offsetof(emu_shared, procs) || s->proc_size != sizeof(emu_proc) ||
        s->max_procs != EMU_MAX_PROCS || s->max_devices != EMU_MAX_DEVICES) {
        return 0;
    }
    for (uint32_t d = 0; d < s->devices; d++) {
        if (s->dev[d].slots < 1 || s->dev[d].slots > EMU_MAX_SLOTS || s->dev[d].sms < 1) {
            return 0;
        }
    }
    return 1;
}

/* Frees what dead processes left behind: their memory and their SM demand. */
static void reap_dead(emu_shared *s) {
    for (int i = 0; i < EMU_MAX_PROCS; i++) {
        int32_t pid = atomic_load(&s->procs[i].pid);
        if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) {
            if (atomic_compare_exchange_strong(&s->procs[i].pid, &pid, -1)) {
                for (uint32_t d = 0; d < s->devices; d++) {
                    uint64_t held = atomic_exchange(&s->procs[i].memory[d], 0);
                    atomic_fetch_sub(&s->dev[d].memory_used, held);
                    atomic_store(&s->procs[i].demand[d], 0);
                    atomic_store(&s->procs[i].blocks[d], 0);
                }
                atomic_store(&s->procs[i].pid, 0);
            }
        }
    }
}

/* An MPS client's kernels use at most this share of the SMs (NVIDIA's MPS documentation, "active thread
 * percentage"); read once, like the real server reads it when the client connects. */
static double mps_percentage = 100;

static void read_mps_limit(void) {
    const char *v = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
    if (v == NULL || *v == '\0') {
        return;
    }
    char *end = NULL;
    errno = 0;
    double p = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !(p > 0 && p <= 100)) {
        emu_log("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s is not allowed: must be a number in (0, 100]; ignored", v);
        return;
    }
    mps_percentage = p;
}

/* This process's start time in clock ticks since boot (field 22 of /proc/self/stat), 0 if it cannot be read. */
static uint64_t start_ticks(void) {
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses: fields follow its last ')' */
    if (p == NULL) {
        return 0;
    }
    for (int field = 2; field < 22 && p != NULL; field++) {
        p = strchr(p + 1, ' ');
    }
    return p == NULL ? 0 : strtoull(p + 1, NULL, 10);
}

static void open_state(void) {
    const char *level = getenv("DILU_EMU_LOG");
    log_enabled = !(level != NULL && strcmp(level, "off") == 0);
    const char *dir = getenv("DILU_EMU_DIR");
    char path[512];
    snprintf(path, sizeof(path), "%s/dilu-emu-gpu-%u", dir != NULL && *dir != '\0' ? dir : "/dev/shm",
             (unsigned)getuid());
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        emu_log("cannot open %s: %s", path, strerror(errno));
        return;
    }
    if (flock(fd, LOCK_EX) != 0) {
        emu_log("cannot lock %s: %s", path, strerror(errno));
        close(fd);
        return;
    }
    struct stat st;
    int fresh = fstat(fd, &st) != 0 || st.st_size != (off_t)sizeof(emu_shared);
    if (fresh && ftruncate(fd, sizeof(emu_shared)) != 0) {
        emu_log("cannot size %s: %s", path, strerror(errno));
        close(fd);
        return;
    }
    void *m = mmap(NULL, sizeof(emu_shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        emu_log("cannot map %s: %s", path, strerror(errno));
        close(fd);
        return;
    }
    emu_shared *s = m;
    if (fresh || !valid(s) || atomic_load(&s->ready) != 1) {
        if (!fresh) {
            emu_log("%s was corrupt or of another version; recreated it", path);
        }
        if (initialise(s) != 0) {
            munmap(m, sizeof(emu_shared));
            close(fd);
            return;
        }
    }
    reap_dead(s);
    pid_t me = getpid();
    for (int i = 0; i < EMU_MAX_PROCS && self == NULL; i++) {
        int32_t expected = 0;
        if (atomic_compare_exchange_strong(&s->procs[i].pid, &expected, me)) {
            self = &s->procs[i];
            for (int d = 0; d < EMU_MAX_DEVICES; d++) {
                atomic_store(&self->blocks[d], 0);
            }
            self->start_ticks = start_ticks();
        }
    }
    if (flock(fd, LOCK_UN) != 0 || close(fd) != 0) {
        emu_log("cannot release %s: %s", path, strerror(errno));
    }
    if (self == NULL) {
        emu_log("more than %d processes on the emulated GPU", EMU_MAX_PROCS);
        return;
    }
    read_mps_limit();
    state = s;
}

emu_shared *emu_state(void) {
    if (pthread_once(&once, open_state) != 0) {
        return NULL;
    }
    return state;
}

emu_proc *emu_self(void) {
    return emu_state() != NULL ? self : NULL;
}

int emu_self_index(void) {
    return (int)(self - state->procs);
}

void emu_lock_device(emu_device *d) {
    int rc = pthread_mutex_lock(&d->lock);
    if (rc == EOWNERDEAD) {
        /* A process died inside: what it was changing is a few times, still usable as they are. */
        rc = pthread_mutex_consistent(&d->lock);
    }
    if (rc != 0) {
        emu_log("the emulated GPU's lock failed: %s", strerror(rc));
        abort();
    }
}

void emu_unlock_device(emu_device *d) {
    int rc = pthread_mutex_unlock(&d->lock);
    if (rc != 0) {
        emu_log("the emulated GPU's lock failed: %s", strerror(rc));
        abort();
    }
}

static emu_counters own[EMU_MAX_DEVICES];

emu_counters *emu_own_counters(int device) {
    return &own[device];
}

uint32_t emu_mps_slots(int device) {
    const emu_device *d = &state->dev[device];
    uint32_t per_sm = d->slots / d->sms;
    uint32_t sms = (uint32_t)ceil(mps_percentage * d->sms / 100.0 - 1e-9);
    return (sms < 1 ? 1 : sms) * per_sm;
}

/*
 * The memory witness: the kernel's own record of what this process holds. Every byte of emulated GPU memory the
 * process holds on device d is also a byte of a mapping of a memfd named "dilu-emu-memory-<d>", which
 * /proc/<pid>/maps shows to the node agent's backstop. Only the kernel writes that file and only this process
 * changes its own mappings, so a neighbour on the same emulated GPU, which can write every shared slot, cannot make
 * a process look bigger than it is there. The mapping is PROT_NONE and never touched: it costs address space, not
 * memory. A child does not inherit it (MADV_DONTFORK): the child holds nothing.
 */
typedef struct witness {
    pthread_mutex_t lock;
    int fd;
    void *addr;
    size_t length;
    uint64_t held;
} witness;

static witness witnesses[EMU_MAX_DEVICES] = {
    [0 ... EMU_MAX_DEVICES - 1] = {PTHREAD_MUTEX_INITIALIZER, -1, NULL, 0, 0}};

static void witness_change(int device, uint64_t bytes, int grow) {
    witness *w = &witnesses[device];
    pthread_mutex_lock(&w->lock);
    w->held = grow ? w->held + bytes : w->held - bytes;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t want = (size_t)((w->held + page - 1) / page * page);
    if (want != w->length && w->fd < 0) {
        char name[32];
        snprintf(name, sizeof(name), "dilu-emu-memory-%d", device);
        w->fd = memfd_create(name, MFD_CLOEXEC);
        if (w->fd < 0) {
            emu_log("no memory witness for the node agent (memfd_create: %s)", strerror(errno));
        }
    }
    if (want != w->length && w->fd >= 0) {
        void *a = NULL;
        if (want == 0) {
            munmap(w->addr, w->length);
        } else if (w->addr == NULL) {
            a = mmap(NULL, want, PROT_NONE, MAP_SHARED | MAP_NORESERVE, w->fd, 0);
        } else {
            a = mremap(w->addr, w->length, want, MREMAP_MAYMOVE);
        }
        if (a == MAP_FAILED) {
            emu_log("the memory witness could not follow %llu bytes: %s", (unsigned long long)w->held, strerror(errno));
        } else {
            if (a != NULL) {
                madvise(a, want, MADV_DONTFORK);
            }
            w->addr = a;
            w->length = want;
        }
    }
    pthread_mutex_unlock(&w->lock);
}

void emu_reap_dead(void) {
    if (state != NULL) {
        reap_dead(state);
    }
}

static int fits(const emu_shared *s, int device, uint64_t used, uint64_t bytes) {
    return bytes <= s->dev[device].memory_total && used <= s->dev[device].memory_total - bytes;
}

int emu_reserve_memory(int device, uint64_t bytes) {
    emu_shared *s = state;
    uint64_t used = atomic_load(&s->dev[device].memory_used);
    if (!fits(s, device, used, bytes)) {
        /* A GPU frees a process's memory when the process dies; here, at the latest when someone needs it. */
        reap_dead(s);
        used = atomic_load(&s->dev[device].memory_used);
    }
    do {
        if (!fits(s, device, used, bytes)) {
            return 0;
        }
    } while (!atomic_compare_exchange_weak(&s->dev[device].memory_used, &used, used + bytes));
    atomic_fetch_add(&self->memory[device], bytes);
    witness_change(device, bytes, 1);
    return 1;
}

void emu_release_memory(int device, uint64_t bytes) {
    atomic_fetch_sub(&state->dev[device].memory_used, bytes);
    atomic_fetch_sub(&self->memory[device], bytes);
    witness_change(device, bytes, 0);
}

void emu_count_own_blocks(int device, uint64_t blocks) {
    if (self != NULL) {
        atomic_fetch_add_explicit(&self->blocks[device], blocks, memory_order_relaxed);
    }
}

__attribute__((destructor)) static void leave(void) {
    if (self != NULL && state != NULL) {
        for (uint32_t d = 0; d < state->devices; d++) {
            uint64_t held = atomic_exchange(&self->memory[d], 0);
            atomic_fetch_sub(&state->dev[d].memory_used, held);
            atomic_store(&self->demand[d], 0);
            atomic_store(&self->blocks[d], 0);
        }
        atomic_store(&self->pid, 0);
    }
}
