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
 * - vfork shares its parent's memory: a vfork child that allocates takes a slot in the state it shares with its
 *   parent, which then takes yet another; the parent's earlier bookings stay in its first slot until it exits.
 *   The container's total is then too high, never too low.
 *
 * The books are the modules' own (memory.c, vmm.c): each hands its lock and its drop to hook_process_keeps when the
 * hook is loaded, so that this file knows the protocol and none of them.
 *
 * Launches are counted per container, not per process: fork changes nothing there, and nothing here is on the
 * launch path.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
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
    if (__atomic_load_n(&c->pid, __ATOMIC_ACQUIRE) != (int32_t)me) {
        become_own(c, me);
    }
    hook_unlock(&slot_lock, SLOT_LOCK);
    return c;
}
