/* The emulated GPU's state, shared by every process on the machine (a mapped file), and this process's view of it. */
#ifndef DILU_EMU_SHARED_H
#define DILU_EMU_SHARED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define EMU_MAGIC 0x454d5547u /* "EMUG" */
#define EMU_VERSION 3u
#define EMU_MAX_DEVICES 8
#define EMU_MAX_PROCS 128
#define EMU_MAX_SMS 256
#define EMU_MAX_BLOCKS_PER_SM 8
#define EMU_MAX_SLOTS (EMU_MAX_SMS * EMU_MAX_BLOCKS_PER_SM)
#define EMU_STEP_NS 200000L /* progressive models re-read their share at least this often */

/* What a device or a process counted; device totals are shared, a process's own are not. */
typedef struct emu_counters {
    _Atomic uint64_t kernels;
    _Atomic uint64_t blocks;
    _Atomic uint64_t busy_slot_ns;
    _Atomic uint64_t held_ns;
    _Atomic uint64_t slices;
    _Atomic uint64_t share_sm_ns;
    _Atomic uint64_t kernel_ns;
} emu_counters;

typedef struct emu_device {
    uint32_t sms;
    uint32_t slots; /* sms × resident blocks per SM */
    uint64_t memory_total;
    _Atomic uint64_t memory_used;
    char name[64];
    emu_counters totals;
    /* Guarded by `lock` (process-shared and robust, so a process dying inside cannot wedge the GPU). */
    pthread_mutex_t lock;
    uint64_t frontier_ns;  /* fifo: when the last block of the latest unrestricted kernel was dispatched */
    int32_t holder;        /* timeslice: index + 1 of the process holding the GPU, 0 for none */
    uint32_t reserved;
    uint64_t slice_end_ns; /* timeslice: when the holder's slice ends */
    uint64_t slot_free_ns[EMU_MAX_SLOTS]; /* fifo: when each slot finishes the block it was given */
} emu_device;

/*
 * One process using the emulated GPU: what it is running now, for everyone's share, and what it has run, for the
 * node agent's backstop (device-plugin's EmulatedGpuProcesses reads these slots by the offsets asserted in
 * shared.c; change both or neither). Every process of every container on the GPU can write every slot: the agent
 * takes from here only what it can attribute by the kernel's own records (the pid and start time of a process it
 * found mapping this file) and uses it for reports, never to end a process.
 */
typedef struct emu_proc {
    _Atomic int32_t pid; /* as the process sees itself: the pid in its own pid namespace */
    uint32_t reserved;
    _Atomic uint32_t demand[EMU_MAX_DEVICES]; /* SMs its running kernels could use */
    _Atomic uint64_t memory[EMU_MAX_DEVICES]; /* bytes it holds, reclaimed if it dies */
    uint64_t start_ticks;                     /* its start time, field 22 of /proc/self/stat: the same in every pid
                                               * namespace, so the agent can tell this process from a reused pid */
    _Atomic uint64_t blocks[EMU_MAX_DEVICES]; /* thread blocks of its kernels run to completion */
} emu_proc;

typedef struct emu_shared {
    uint32_t magic;
    uint32_t version;
    uint32_t size;
    _Atomic uint32_t ready;
    uint32_t devices;
    uint32_t sharing;      /* dilu_emu_sharing */
    uint64_t timeslice_ns; /* timeslice: length of one process's slice */
    /* For readers outside the emulator (the node agent): where the process slots are, and their shape. */
    uint32_t procs_offset; /* offsetof(emu_shared, procs) */
    uint32_t proc_size;    /* sizeof(emu_proc) */
    uint32_t max_procs;    /* EMU_MAX_PROCS */
    uint32_t max_devices;  /* EMU_MAX_DEVICES */
    emu_device dev[EMU_MAX_DEVICES];
    emu_proc procs[EMU_MAX_PROCS];
} emu_shared;

emu_shared *emu_state(void);          /* the mapped segment, NULL if it cannot be had */
emu_proc *emu_self(void);             /* this process's slot */
int emu_self_index(void);             /* its index in procs[] */
uint32_t emu_mps_slots(int device);   /* slots an MPS client may use (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) */
emu_counters *emu_own_counters(int device);
void emu_lock_device(emu_device *d);
void emu_unlock_device(emu_device *d);
/* Frees what dead processes left behind (their memory, their SM demand): what a GPU does when a process dies. */
void emu_reap_dead(void);
int emu_reserve_memory(int device, uint64_t bytes);  /* also grows the process's memory witness (shared.c) */
void emu_release_memory(int device, uint64_t bytes);
void emu_count_own_blocks(int device, uint64_t blocks); /* this process's slot: what it ran */
uint64_t emu_now_ns(void);
void emu_sleep_until(uint64_t deadline_ns); /* CLOCK_MONOTONIC, absolute */
void emu_log(const char *fmt, ...);

#endif
