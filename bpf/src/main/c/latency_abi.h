/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What latency.bpf.c and Java (dev.loupe.bpf.LatencyAbi) exchange: per-probe config, in-flight calls,
 * histograms and counters. Java checks these layouts, and every enumerator of the enums in struct
 * latency_constants, against the compiled object's BTF when it opens it (constants are enumerators,
 * not #defines: only types reach BTF).
 */
#ifndef LATENCY_ABI_H
#define LATENCY_ABI_H

#include <linux/types.h>

#include "pid_ns_abi.h"

/*
 * Bucket k counts calls of at most 2^k microseconds (k = 0..30); the last one (+Inf) the rest.
 * Caller stacks hold at most LAT_STACK_MAX addresses (a power of two).
 */
enum latency_limit {
	LAT_FINITE_BUCKETS = 31,
	LAT_STACK_MAX = 64,
};
#define LAT_BUCKETS (LAT_FINITE_BUCKETS + 1)

/*
 * Fine histograms (per probe, for latency quantiles within a few per cent): each power of two
 * [2^p, 2^(p+1)) ns, p = LAT_FINE_MIN_POWER..LAT_FINE_MAX_POWER-1, cut into LAT_FINE_SUB_BUCKETS equal
 * (linear) buckets. Index 0 is below 2^LAT_FINE_MIN_POWER ns, LAT_FINE_BUCKETS-1 from 2^LAT_FINE_MAX_POWER
 * ns; otherwise 1 + (p - LAT_FINE_MIN_POWER) * LAT_FINE_SUB_BUCKETS + the 3 bits below the leading one.
 * The layout of the agent's FineHistogram, which reads these counts as they are.
 */
enum latency_fine {
	LAT_FINE_SUB_BUCKETS = 8,
	LAT_FINE_MIN_POWER = 10,
	LAT_FINE_MAX_POWER = 42,
	LAT_FINE_BUCKETS = 258, /* (MAX_POWER - MIN_POWER) * SUB_BUCKETS + underflow + overflow */
};

enum latency_kind {
	LAT_KIND_GO     = 0, /* entry uprobe + a uprobe on every RET; keyed by goroutine */
	LAT_KIND_NATIVE = 1, /* entry uprobe + uretprobe; keyed by thread */
};

enum latency_g_source {
	LAT_G_R14 = 0, /* Go >= 1.17 ABIInternal: g in R14 at entry and at RET */
	LAT_G_TLS = 1, /* g at fs_base - 8 (task_struct thread.fsbase) */
};

/* probes[probe id]: written by Java before the probe's links are attached. The id is the BPF cookie. */
struct latency_probe {
	__u32 active;
	__u32 kind;        /* LAT_KIND_* */
	__u32 g_source;    /* LAT_G_* (Go only) */
	__u32 goid_offset; /* offset of goid in runtime.g (Go only) */
	__u32 stacks;      /* 1: capture the caller stack at entry into the call's group */
};

/*
 * One in-flight call. id is the goroutine id (Go) or thread id (native); depth tells nested calls of one
 * goroutine/thread apart: for Go g.stack.hi - SP (the same at entry and at RET, and unchanged when the
 * runtime moves the stack), for native code the SP at entry (the uretprobe sees it + 8).
 */
struct latency_key {
	__u32 tgid;
	__u32 probe;
	__u64 id;
	__u64 depth;
};

struct latency_call {
	__u64 start_ns; /* bpf_ktime_get_ns (CLOCK_MONOTONIC) at the first entry */
	__u32 tid;      /* thread at entry: a different thread at exit is a migration */
	__u32 reentries;
	__u64 stack_id; /* LAT_STACK_NONE, LAT_STACK_LOST or a key of stacks */
};

/* Caller stacks at entry (probes with stacks on): ctx->ip, the return address at [SP], then the frame-pointer chain. */
enum latency_stack_id {
	LAT_STACK_NONE = 0, /* stacks off for the probe */
	LAT_STACK_LOST = 1, /* the stacks map was full */
};

/* stacks[stack id]: the id is a 64-bit hash of tgid and the addresses (never 0 or 1). */
struct latency_stack {
	__u32 tgid;
	__u32 depth;                  /* addresses used in addrs */
	__u64 addrs[LAT_STACK_MAX];   /* addrs[0] = the probed function's entry (runtime address), then return addresses */
};

/*
 * Calls aggregated per process, goroutine, caller stack, bucket and fine bucket, summed at exit in the kernel
 * and drained (read and deleted) by Java each interval. gen is the control map's generation when the call returned:
 * Java flips it before draining, so the entries it reads and deletes are no longer being updated.
 */
struct latency_group_key {
	__u32 probe;
	__u32 tgid;     /* as Java's /proc names it (pid_ns_abi.h); 0: outside Java's PID namespace */
	__u64 goid;     /* Go: goroutine id; native: 0 */
	__u64 stack_id; /* as latency_call.stack_id */
	__u32 bucket;   /* 0..LAT_FINITE_BUCKETS, as the histograms */
	__u32 fine_bucket; /* 0..LAT_FINE_BUCKETS-1, as the fine histograms */
	__u32 gen;
	__u32 pad;      /* zero: a hash key's bytes are compared whole, and implicit padding is not zeroed */
};

struct latency_group {
	__u64 count;
	__u64 sum_ns;
	char comm[16]; /* bpf_get_current_comm at the first return of the group (the returning thread's name) */
};

/* Per probe, per CPU; never reset by the kernel (Java sums CPUs: cumulative since attach). */
struct latency_hist {
	__u64 buckets[LAT_BUCKETS];
	__u64 sum_ns;
	__u64 count;
};

/*
 * fine_histograms[probe id]: one array shared by all CPUs, added to atomically, never reset by the kernel
 * (cumulative since attach). Not per CPU: at 2 KiB a probe that would be 2 KiB per probe per CPU, 128 MiB for
 * 1,000 probes on 64 CPUs.
 */
struct latency_fine_hist {
	__u64 buckets[LAT_FINE_BUCKETS];
};

/* Per-CPU counters, indexes into latency_stats. */
enum latency_stat {
	LSTAT_ENTRIES = 0,      /* calls entered (first entry only) */
	LSTAT_EXITS,            /* calls measured into a histogram */
	LSTAT_MIGRATIONS,       /* calls that returned on another thread than they entered */
	LSTAT_REENTRIES,        /* Go: entry ran again for one call (stack growth, preemption) and was collapsed */
	LSTAT_STALE_REPLACED,   /* native: an entry at the same thread and SP was still there (its exit was missed) */
	LSTAT_UNMATCHED_EXITS,  /* an exit with no entry (attached mid-call, entry dropped or aged out) */
	LSTAT_INFLIGHT_FULL,    /* the in-flight map was full: the call is not measured */
	LSTAT_G_READ_ERRORS,    /* Go: g or goid unreadable */
	LSTAT_UNCONFIGURED,     /* a hit with a cookie that names no active probe */
	LSTAT_GROUPS_FULL,      /* the groups map was full: the call is in the histogram but in no group */
	LSTAT_STACKS_FULL,      /* the stacks map was full: the call's group has stack LAT_STACK_LOST */
	LSTAT_MAX
};

/*
 * One member per enum Java checks. clang writes into BTF only the types something uses; latency.bpf.c's
 * latency_constants global has this type, so every enumerator above reaches the object's BTF.
 */
struct latency_constants {
	enum latency_limit limit;
	enum latency_fine fine;
	enum latency_kind kind;
	enum latency_g_source g_source;
	enum latency_stack_id stack_id;
	enum latency_stat stat;
	enum pid_ns_mode pid_ns_mode;
};

#endif
