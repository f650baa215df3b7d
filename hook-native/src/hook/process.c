/*
 * This process's slot in the container's report page, across fork. Each slot must hold what its own process
 * allocated, no more and no less (slots.c). A child made by fork inherits the hook's state, its parent's slot
 * included: its allocations would be booked there and, once the parent died, taken off the total while the child
 * still held them. So:
 *
 * - fork (pthread_atfork): the books are held still across the fork. In the child they are dropped (they are the
 *   parent's: device memory is not inherited), and the child has no slot until it books something, when it
 *   takes one of its own (hook_process).
 * - a child made without fork's handlers (the clone system call made directly): every memory call compares
 *   getpid() with the slot's owner, and a child that finds its parent's does the same there. Should another
 *   thread of the parent have held a lock of the books at that moment, that child waits forever: only it.
 * - a child that shares its parent's address space (the clone system call with CLONE_VM but not CLONE_THREAD, or
 *   vfork) shares its CUDA context and its memory too: what it allocates outlives it for as long as the parent
 *   lives, and what the parent allocated outlives the parent for as long as the child does. So it books in the
 *   slot of the address space's owner, and names itself there as the slot's sharer (slots.c reclaims the slot
 *   only once both are gone). It is told from a forked child by a page mapped MADV_DONTFORK: a fork leaves that
 *   page out of the child's copy, a shared address space is the same mapping (mincore answers ENOMEM only where it
 *   is not mapped). The sharer recorded is the latest one that booked while the one before was gone; with more
 *   than one alive at once, the slot follows the owner and one of them (issue 45, escape 5: before this, a
 *   CLONE_VM child's 900 MiB came off the books when it exited, and 1,801 MiB were held on a 1,024 MiB share).
 *
 * The books are the modules' own (memory.c, vmm.c): each hands its lock and its drop to hook_process_keeps when the
 * hook is loaded, so that this file knows the protocol and none of them.
 *
 * Launches are counted per container, not per process: fork changes nothing there, and nothing here is on the
 * launch path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hook.h"

/* One entry per module that keeps books: memory.c and vmm.c. */
#define MAX_BOOKS 4
#define SLOT_LOCK "the hook's process lock"

static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t forks_watched = PTHREAD_ONCE_INIT;
/* Filled by the modules' constructors, before any thread of the process can reach the readers below. */
static const hook_books *kept[MAX_BOOKS];
static size_t kept_count;

void hook_process_keeps(const hook_books *books) {
    if (kept_count == MAX_BOOKS) {
        /* A build with more such modules than room: a fork would copy books it could not hold still. */
        hook_log(LOG_ERROR, "more than %d modules keep books per process: raise MAX_BOOKS (process.c)", MAX_BOOKS);
        abort();
    }
    kept[kept_count++] = books;
}

static void drop_inherited(void) {
    for (size_t i = 0; i < kept_count; i++) {
        kept[i]->drop();
    }
}

/* The books the process inherited are dropped, and it takes a slot of its own (NULL if none is free: then it
 * gets no device memory, memory.c). Under slot_lock. */
static void become_own(hook_control *c, pid_t me) {
    drop_inherited();
    c->self = hook_slot_take(c->report);
    if (c->self == NULL) {
        hook_log(LOG_ERROR, "all %d process slots of the container's report page are taken: process %d gets no "
                 "device memory", DILU_MAX_PROCESSES, (int)me);
    }
    __atomic_store_n(&c->pid, (int32_t)me, __ATOMIC_RELEASE);
}

/* ---- the address space ---- */

/* A page of this address space that no fork copies; NULL where it could not be made (then every child is taken for
 * a forked one, as before). */
static void *own_space;
static size_t own_space_size;

static void mark_space(void) {
    long size = sysconf(_SC_PAGESIZE);
    void *m = mmap(NULL, (size_t)size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        hook_log(LOG_WARN, "cannot map the page that tells a shared address space from a fork: %s", strerror(errno));
        return;
    }
    if (madvise(m, (size_t)size, MADV_DONTFORK) != 0) {
        hook_log(LOG_WARN, "cannot keep the address space's page out of forks: %s", strerror(errno));
        if (munmap(m, (size_t)size) != 0) {
            hook_log(LOG_WARN, "unmapping the address space's page: %s", strerror(errno));
        }
        return;
    }
    own_space = m;
    own_space_size = (size_t)size;
}

/* Whether this process runs in the address space whose owner is the slot's process (not in a fork's copy). */
static int same_space(void) {
    unsigned char resident;
    return own_space != NULL && mincore(own_space, own_space_size, &resident) == 0;
}

/* A sharer of the owner's address space names itself in the owner's slot, unless a live sharer is named there. */
static void name_sharer(hook_control *c, pid_t me) {
    if (c->self == NULL) {
        return;
    }
    int32_t named = __atomic_load_n(&c->self->sharer, __ATOMIC_ACQUIRE);
    if (named != (int32_t)me && (named <= 0 || hook_pid_gone(named))) {
        __atomic_compare_exchange_n(&c->self->sharer, &named, (int32_t)me, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    }
}

/* ---- fork ---- */

/* slot_lock first, as hook_process takes it before any module's lock. */
static void before_fork(void) {
    hook_lock(&slot_lock, SLOT_LOCK);
    for (size_t i = 0; i < kept_count; i++) {
        hook_lock(kept[i]->lock, kept[i]->what);
    }
}

/* After the fork, in the parent and first thing in the child. */
static void release_books(void) {
    for (size_t i = kept_count; i > 0; i--) {
        hook_unlock(kept[i - 1]->lock, kept[i - 1]->what);
    }
    hook_unlock(&slot_lock, SLOT_LOCK);
}

/* The child is single-threaded here, and holds the locks the forking thread took. */
static void after_fork_in_child(void) {
    release_books();
    drop_inherited();
    hook_control *c = hook_control_get();
    c->self = NULL;
    __atomic_store_n(&c->pid, 0, __ATOMIC_RELEASE); /* its own slot when it first books (hook_process) */
}

/*
 * Installed the first time the books are asked for: before that nothing is booked and no lock of the books is
 * held, so a child forked earlier needs no handler (it finds its parent's pid in the slot, as a child of clone does).
 */
static void watch_forks(void) {
    mark_space();
    int rc = pthread_atfork(before_fork, release_books, after_fork_in_child);
    if (rc != 0) {
        /* Then a forked child is caught by hook_process's getpid() instead, without the consistent copy. */
        hook_log(LOG_WARN, "cannot install the hook's fork handlers: %s", strerror(rc));
    }
}

hook_control *hook_process(void) {
    hook_control *c = hook_control_get();
    if (c->refuse) {
        return c;
    }
    int rc = pthread_once(&forks_watched, watch_forks);
    if (rc != 0) {
        hook_log(LOG_WARN, "cannot install the hook's fork handlers: %s", strerror(rc));
    }
    pid_t me = getpid();
    if (__atomic_load_n(&c->pid, __ATOMIC_ACQUIRE) == (int32_t)me) {
        return c;
    }
    hook_lock(&slot_lock, SLOT_LOCK);
    int32_t owner = __atomic_load_n(&c->pid, __ATOMIC_ACQUIRE);
    if (owner != 0 && owner != (int32_t)me && same_space()) {
        name_sharer(c, me); /* the owner's books are this process's too: it books there */
    } else if (owner != (int32_t)me) {
        become_own(c, me);
    }
    hook_unlock(&slot_lock, SLOT_LOCK);
    return c;
}
