/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one definition of what Loupe's BPF programs and Java exchange: the sample record, the counters
 * and the config. Java (dev.loupe.bpf.KernelAbi) declares the same layouts and checks them against the
 * compiled object's BTF when it is opened, so a change here that Java does not follow fails loudly.
 */
#ifndef LOUPE_ABI_H
#define LOUPE_ABI_H

#include <linux/types.h>

#define MAX_KERNEL_FRAMES 127
#define MAX_USER_FRAMES 127
#define MAX_FRAMES (MAX_KERNEL_FRAMES + MAX_USER_FRAMES)
#define TASK_COMM_LEN 16

/* Ring-buffer record, one per sample; variable length: only the used frames are sent. */
struct sample {
	__u32 pid;            /* tgid */
	__u32 tid;
	__u32 cpu;
	__u16 kernel_frames;
	__u16 user_frames;
	char comm[TASK_COMM_LEN];        /* process (group leader) name */
	char thread_comm[TASK_COMM_LEN]; /* thread name */
	__u64 ktime_ns;
	__u32 flags;          /* SAMPLE_F_* */
	__u32 reserved;
	__u64 start_boottime; /* process start, ns since boot: /proc/PID/stat's starttime, exact (PID reuse) */
	__u64 frames[MAX_FRAMES]; /* kernel frames (leaf first), then user frames (leaf first) */
};

#define SAMPLE_F_USER_TRUNCATED  1
#define SAMPLE_F_USER_READ_ERROR 2
#define SAMPLE_F_KERNEL_ERROR    4

/* Per-CPU counters, indexes into the stats map. */
enum stat {
	STAT_SAMPLES = 0,      /* samples seen (after idle/filter) */
	STAT_IDLE,             /* samples on the idle task, ignored */
	STAT_FILTERED,         /* samples of pids outside the filter */
	STAT_RINGBUF_DROPS,    /* ring buffer full: sample lost */
	STAT_USER_READ_ERRORS, /* frame pointer chain unreadable (stack stops there) */
	STAT_USER_TRUNCATED,   /* more than MAX_USER_FRAMES frames */
	STAT_KERNEL_ERRORS,    /* bpf_get_stack failed */
	STAT_MAX
};

/* Written once by Java before sampling starts (config map, key 0). */
struct config {
	__u32 filter_pids;  /* 1: only pids in pid_filter */
	__u32 wakeup_bytes; /* wake user space once this much data is waiting */
};

#endif
