/*
 * The report page's process slots. Memory is booked per process so that what a process dies holding can be given
 * back: the next process to take a slot takes a dead process's bytes off the container's total. That is exact only
 * if each slot holds what its own address space allocated (process.c keeps it so across fork and clone): a process
 * that shares another's address space books in that one's slot, and names itself there as its sharer, so that the
 * slot outlives whichever of the two ends first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "hook.h"

int hook_pid_gone(int32_t pid) {
    return kill(pid, 0) != 0 && errno == ESRCH;
}

dilu_report_process *hook_slot_take(dilu_report_page *r) {
    pid_t me = getpid();
    dilu_report_process *mine = NULL;
    for (int i = 0; i < DILU_MAX_PROCESSES; i++) {
        _Atomic int32_t *pid = (_Atomic int32_t *)&r->process[i].pid;
        int32_t p = atomic_load(pid);
        int32_t sharer = __atomic_load_n(&r->process[i].sharer, __ATOMIC_ACQUIRE);
        if (p > 0 && p != me && hook_pid_gone(p) && (sharer <= 0 || (sharer != me && hook_pid_gone(sharer))) &&
            atomic_compare_exchange_strong(pid, &p, -1)) {
            /* The slot holds exactly what that process booked: only that comes off the container's total. */
            for (int d = 0; d < DILU_MAX_DEVICES; d++) {
                uint64_t held = atomic_exchange((_Atomic uint64_t *)&r->process[i].memory_bytes[d], 0);
                atomic_fetch_sub((_Atomic uint64_t *)&r->device[d].memory_used_bytes, held);
            }
            __atomic_store_n(&r->process[i].sharer, 0, __ATOMIC_RELEASE);
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
