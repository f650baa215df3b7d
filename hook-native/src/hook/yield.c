/*
 * Yielding: the order of kernels between containers, which tokens cannot give. A GPU dispatches the thread blocks
 * of its kernels in launch order, and a kernel once queued is not taken back, so a kernel that reaches the GPU just
 * after a neighbour's launch cycle began delays the rest of that cycle by the kernel's remaining waves, whatever
 * the token rates (docs/architecture.md, "Token issuing"). Every booked container on a GPU publishes its launch
 * cycle in flight (its cycle page, read-write); the agent links each page into the GPU's neighbours directory under
 * a name that says its class, SLO or best-effort (dilu_control.h). Where the agent asks for it (the grant's
 * yield_us), a launch waits, before it goes to the driver, while a neighbour's cycle that goes first is in flight:
 *   - a best-effort container lets every SLO cycle go first (an unlisted, parked one every listed cycle), and,
 *     beside such a neighbour, also waits while its own earlier work on the kernel's stream still runs, so that at
 *     most one of its kernels is queued ahead of whatever comes next;
 *   - among best-effort containers, the cycle that began first goes first (first come, first served), not
 *     interleaved kernel by kernel: two training loops stop running their GPU phases, and then their gaps, at the
 *     same time;
 *   - an SLO container is asked to yield only while it borrows beyond its request, so it lets every other SLO
 *     cycle go first, and waits for its own stream beside them, as a best-effort one does beside SLO work;
 * at most yield_us in all, and never for a cycle older than that (a page that is never cleared holds nobody).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hook.h"

/* The wait backs off from 20 µs to 100 µs a step: a kernel of a millisecond costs ten wake-ups, not fifty (on a small
 * host those wake-ups are CPU its neighbours' processes wait for), and what the launch loses after the wait could
 * have ended is under 100 µs. */
#define YIELD_FIRST_STEP_NS 20000L
#define YIELD_MAX_STEP_NS 100000L
/* The neighbours directory is read again at most this often: SLO neighbours come and go in seconds, not ms. */
#define RESCAN_NS 100000000ull
#define MAX_NEIGHBOURS 16

/* A page's class, from the name the agent linked it under: a lower one goes first. A container whose page is not
 * listed (parked, or of an agent that links none) is below both. */
enum { CLASS_SLO, CLASS_BEST_EFFORT, CLASS_UNLISTED };

typedef struct neighbour {
    const dilu_cycle_page *page;
    int class;
    ino_t ino; /* orders two cycles that began in the same nanosecond */
} neighbour;

static pthread_mutex_t neighbours_lock = PTHREAD_MUTEX_INITIALIZER;
static neighbour neighbours[MAX_NEIGHBOURS];
static int neighbour_count;
static int own_class = CLASS_UNLISTED;
static int defers_listed; /* whether a neighbour whose every cycle goes first is listed (the own-stream wait) */
static uint64_t scanned_ns;
static int scanned;

static pthread_once_t own_once = PTHREAD_ONCE_INIT;
static dilu_cycle_page *own; /* this container's cycle page, where it has one */

/* The file behind the container's own cycle page, so that it never waits for itself (an SLO container's own page is
 * among its neighbours'). By system call: fstat is a glibc 2.33 symbol (glibc_floor.h). */
static dev_t own_dev;
static ino_t own_ino;

static int identify(int fd, dev_t *dev, ino_t *ino) {
    struct stat st;
    if (syscall(SYS_fstat, fd, &st) != 0) {
        return 0;
    }
    *dev = st.st_dev;
    *ino = st.st_ino;
    return 1;
}

/* A cycle page of the layout this hook knows, mapped; NULL otherwise (nothing is logged: absent is normal). Own: the
 * container's own page, whose file is remembered; otherwise that file is refused, and *is_own says so. */
static void *map_cycle_page(int dir_fd, const char *name, int own_page, int *is_own, ino_t *ino_out) {
    int writable = own_page;
    int fd = openat(dir_fd, name, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        return NULL;
    }
    dev_t dev;
    ino_t ino;
    int known = identify(fd, &dev, &ino);
    int mine = known && !own_page && own != NULL && dev == own_dev && ino == own_ino;
    if (is_own != NULL) {
        *is_own = mine;
    }
    if (!known || mine) {
        if (close(fd) != 0) {
            hook_log(LOG_WARN, "closing the cycle page %s: %s", name, strerror(errno));
        }
        return NULL;
    }
    if (own_page) {
        own_dev = dev;
        own_ino = ino;
    }
    if (ino_out != NULL) {
        *ino_out = ino;
    }
    off_t end = lseek(fd, 0, SEEK_END);
    void *m = end >= (off_t)sizeof(dilu_cycle_page)
                  ? mmap(NULL, sizeof(dilu_cycle_page), writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    if (close(fd) != 0) {
        hook_log(LOG_WARN, "closing the cycle page %s: %s", name, strerror(errno));
    }
    if (m == MAP_FAILED) {
        return NULL;
    }
    const dilu_header *h = m;
    if (h->magic != DILU_CONTROL_MAGIC || h->version != DILU_CONTROL_VERSION || h->size != sizeof(dilu_cycle_page) ||
        h->kind != DILU_KIND_CYCLE) {
        if (munmap(m, sizeof(dilu_cycle_page)) != 0) {
            hook_log(LOG_WARN, "unmapping the cycle page %s: %s", name, strerror(errno));
        }
        return NULL;
    }
    return m;
}

static void map_own(void) {
    int dir = open(DILU_CONTROL_PATH, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) {
        return;
    }
    own = map_cycle_page(dir, DILU_CYCLE_FILE, 1, NULL, NULL);
    if (close(dir) != 0) {
        hook_log(LOG_WARN, "closing %s: %s", DILU_CONTROL_PATH, strerror(errno));
    }
}

void hook_cycle_started(uint64_t now) {
    if (pthread_once(&own_once, map_own) != 0 || own == NULL) {
        return;
    }
    uint64_t expected = 0;
    __atomic_compare_exchange_n(&own->cycle_started_ns, &expected, now == 0 ? 1 : now, 0, __ATOMIC_RELEASE,
                                __ATOMIC_RELAXED);
}

void hook_cycle_ended(void) {
    if (pthread_once(&own_once, map_own) != 0 || own == NULL) {
        return;
    }
    __atomic_store_n(&own->cycle_started_ns, 0, __ATOMIC_RELEASE);
}

/* Whether every cycle of neighbour n goes before this container's: a higher class's, and, for a borrowing SLO
 * container, another SLO one's. */
static int always_first(const neighbour *n) {
    return n->class < own_class || (own_class == CLASS_SLO && n->class == CLASS_SLO);
}

/* Whether neighbour n's cycle, begun at `started`, goes before this container's, begun at `mine`. */
static int goes_first(const neighbour *n, uint64_t started, uint64_t mine) {
    if (always_first(n)) {
        return 1;
    }
    return n->class == own_class && (started < mine || (started == mine && n->ino < own_ino));
}

static int class_of(const char *name) {
    if (strncmp(name, DILU_NEIGHBOUR_SLO, sizeof(DILU_NEIGHBOUR_SLO) - 1) == 0) {
        return CLASS_SLO;
    }
    return strncmp(name, DILU_NEIGHBOUR_BE, sizeof(DILU_NEIGHBOUR_BE) - 1) == 0 ? CLASS_BEST_EFFORT : -1;
}

/* Maps the neighbours' pages again, under neighbours_lock; the old mappings are dropped first. */
static void rescan(uint64_t now) {
    for (int i = 0; i < neighbour_count; i++) {
        if (munmap((void *)neighbours[i].page, sizeof(dilu_cycle_page)) != 0) {
            hook_log(LOG_WARN, "unmapping a neighbour's cycle page: %s", strerror(errno));
        }
    }
    neighbour_count = 0;
    own_class = CLASS_UNLISTED;
    scanned_ns = now;
    scanned = 1;
    int fd = open(DILU_CONTROL_PATH "/" DILU_NEIGHBOURS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return;
    }
    DIR *dir = fdopendir(fd);
    if (dir == NULL) {
        if (close(fd) != 0) {
            hook_log(LOG_WARN, "closing the neighbours directory: %s", strerror(errno));
        }
        return;
    }
    struct dirent *e;
    while (neighbour_count < MAX_NEIGHBOURS && (e = readdir(dir)) != NULL) {
        int class = class_of(e->d_name);
        if (class < 0) {
            continue; /* ".", "..", or a name no agent gives */
        }
        int mine = 0;
        ino_t ino = 0;
        const dilu_cycle_page *p = map_cycle_page(dirfd(dir), e->d_name, 0, &mine, &ino);
        if (mine) {
            own_class = class;
        } else if (p != NULL) {
            neighbours[neighbour_count++] = (neighbour){p, class, ino};
        }
    }
    defers_listed = 0;
    for (int i = 0; i < neighbour_count; i++) {
        defers_listed |= always_first(&neighbours[i]);
    }
    if (closedir(dir) != 0) {
        hook_log(LOG_WARN, "closing the neighbours directory: %s", strerror(errno));
    }
}

/*
 * Whether a neighbour's cycle that goes first and started less than `bound` ago is in flight now (this container's
 * own cycle began at `mine`), and whether a neighbour whose every cycle goes first is listed; reads the directory
 * again when due.
 */
static int neighbour_in_flight(uint64_t now, uint64_t bound, uint64_t mine, int *defers) {
    *defers = 0;
    if (pthread_once(&own_once, map_own) != 0) {
        return 0;
    }
    pthread_mutex_lock(&neighbours_lock);
    if (!scanned || now - scanned_ns > RESCAN_NS) {
        rescan(now);
    }
    int busy = 0;
    for (int i = 0; i < neighbour_count && !busy; i++) {
        uint64_t started = __atomic_load_n(&neighbours[i].page->cycle_started_ns, __ATOMIC_ACQUIRE);
        busy = started != 0 && started <= now && now - started < bound && goes_first(&neighbours[i], started, mine);
    }
    *defers = defers_listed;
    pthread_mutex_unlock(&neighbours_lock);
    return busy;
}

typedef CUresult (*stream_query_fn)(CUstream);

void hook_yield(int device, CUstream stream, int per_thread) {
    const hook_control *c = hook_control_get(); /* usable: hook_admit admitted the launch */
    uint32_t yield_us = __atomic_load_n(&c->grant->device[device].yield_us, __ATOMIC_RELAXED);
    if (yield_us == 0) {
        return; /* the fast path: one load */
    }
    stream_query_fn query = per_thread ? REAL(stream_query_fn, cuStreamQuery_ptsz) : REAL(stream_query_fn, cuStreamQuery);
    uint64_t bound = (uint64_t)yield_us * 1000, start = hook_now_ns(), now = start;
    /* hook_admit began this container's cycle, if this launch is its first; only a listed container, which has its
     * page, has neighbours of its own class to order against. */
    uint64_t mine = pthread_once(&own_once, map_own) == 0 && own != NULL
                        ? __atomic_load_n(&own->cycle_started_ns, __ATOMIC_RELAXED) : 0;
    if (mine == 0) {
        mine = start;
    }
    struct timespec step = {.tv_sec = 0, .tv_nsec = YIELD_FIRST_STEP_NS};
    int defers = 0;
    while (now - start < bound && (neighbour_in_flight(now, bound, mine, &defers) ||
                                   (defers && query != NULL && query(stream) == CUDA_ERROR_NOT_READY))) {
        nanosleep(&step, NULL);
        step.tv_nsec = step.tv_nsec * 2 < YIELD_MAX_STEP_NS ? step.tv_nsec * 2 : YIELD_MAX_STEP_NS;
        now = hook_now_ns();
    }
}
