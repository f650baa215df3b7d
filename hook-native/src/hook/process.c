/*
 * This process's slot in the container's report page, across fork. Memory is booked per process so that what a
 * process dies holding can be given back: the next process to attach takes a dead process's bytes off the
 * container's total (hook_slot_take). That is exact only if each slot holds what its own process allocated, no
 * more and no less. A child made by fork inherits the hook's state, its parent's slot included: its allocations
 * would be booked there and, once the parent died, taken off the total while the child still held them. So:
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
 * Launches are counted per container, not per process: fork changes nothing there, and nothing here is on the
 * launch path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hook.h"

static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;

dilu_report_process *hook_slot_take(dilu_report_page *r) {
    pid_t me = getpid();
    dilu_report_process *mine = NULL;
    for (int i = 0; i < DILU_MAX_PROCESSES; i++) {
        _Atomic int32_t *pid = (_Atomic int32_t *)&r->process[i].pid;
        int32_t p = atomic_load(pid);
        if (p > 0 && p != me && kill(p, 0) != 0 && errno == ESRCH && atomic_compare_exchange_strong(pid, &p, -1)) {
            /* The slot holds exactly what that process booked: only that comes off the container's total. */
            for (int d = 0; d < DILU_MAX_DEVICES; d++) {
                uint64_t held = atomic_exchange((_Atomic uint64_t *)&r->process[i].memory_bytes[d], 0);
                atomic_fetch_sub((_Atomic uint64_t *)&r->device[d].memory_used_bytes, held);
            }
            atomic_store(pid, 0);
        }
    }
    for (int i = 0; i < DILU_MAX_PROCESSES && mine == NULL; i++) {
        int32_t expected = 0;
        if (atomic_compare_exchange_strong((_Atomic int32_t *)&r->process[i].pid, &expected, me)) {
            mine = &r->process[i];
        }
    }
    return mine;
}

static void lock_or_die(pthread_mutex_t *m) {
    int rc = pthread_mutex_lock(m);
    if (rc != 0) {
        hook_log(LOG_ERROR, "the hook's process lock failed: %s", strerror(rc));
        abort();
    }
}

static void unlock_or_die(pthread_mutex_t *m) {
    int rc = pthread_mutex_unlock(m);
    if (rc != 0) {
        hook_log(LOG_ERROR, "the hook's process lock failed: %s", strerror(rc));
        abort();
    }
}

/* The books the process inherited are dropped, and it takes a slot of its own (NULL if none is free: then it
 * gets no device memory, memory.c). Under slot_lock. */
static void become_own(hook_control *c, pid_t me) {
    hook_memory_drop_inherited();
    hook_vmm_drop_inherited();
    c->self = hook_slot_take(c->report);
    if (c->self == NULL) {
        hook_log(LOG_ERROR, "all %d process slots of the container's report page are taken: process %d gets no "
                 "device memory", DILU_MAX_PROCESSES, (int)me);
    }
    __atomic_store_n(&c->pid, (int32_t)me, __ATOMIC_RELEASE);
}

hook_control *hook_process(void) {
    hook_control *c = hook_control_get();
    if (c->refuse) {
        return c;
    }
    pid_t me = getpid();
    if (__atomic_load_n(&c->pid, __ATOMIC_ACQUIRE) == (int32_t)me) {
        return c;
    }
    lock_or_die(&slot_lock);
    if (__atomic_load_n(&c->pid, __ATOMIC_ACQUIRE) != (int32_t)me) {
        become_own(c, me);
    }
    unlock_or_die(&slot_lock);
    return c;
}

/* ---- fork ---- */

static void before_fork(void) {
    lock_or_die(&slot_lock);
    hook_memory_lock_for_fork();
    hook_vmm_lock_for_fork();
}

static void after_fork_in_parent(void) {
    hook_vmm_unlock_after_fork();
    hook_memory_unlock_after_fork();
    unlock_or_die(&slot_lock);
}

/* The child is single-threaded here, and holds the locks the forking thread took. */
static void after_fork_in_child(void) {
    hook_vmm_unlock_after_fork();
    hook_memory_unlock_after_fork();
    unlock_or_die(&slot_lock);
    hook_memory_drop_inherited();
    hook_vmm_drop_inherited();
    hook_control *c = hook_control_get();
    c->self = NULL;
    __atomic_store_n(&c->pid, 0, __ATOMIC_RELEASE); /* its own slot when it first books (hook_process) */
}

void hook_process_watch_forks(void) {
    int rc = pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
    if (rc != 0) {
        /* Then a forked child is caught by hook_process's getpid() instead, without the consistent copy. */
        hook_log(LOG_WARN, "cannot install the hook's fork handlers: %s", strerror(rc));
    }
}
