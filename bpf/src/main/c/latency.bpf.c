// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Function latency: an entry uprobe and an exit probe per function, durations aggregated into per-probe
 * histograms in the kernel (no per-call event reaches user space). The probe is identified by its BPF
 * cookie (its id), never by ctx->ip, so PIE and non-PIE binaries and every process share one program.
 *
 * Go: the exit is a uprobe on each RET (a uretprobe would rewrite a return address on a stack the runtime
 * moves). Calls are keyed by goroutine, since a goroutine that blocks resumes on any thread, and by stack
 * depth (g.stack.hi - SP), which is the same at entry and at RET and survives stack copies. The entry runs
 * twice for one call when the prologue's stack check fails (morestack grows the stack, or a preemption
 * request, then the function restarts): the second entry finds the call at the same depth and keeps the
 * first timestamp. Recursion enters deeper, so it gets its own key. Limitation: a call left by a panic or
 * runtime.Goexit never reaches a RET; its entry stays until Java ages it out, and until then a later call of
 * the same goroutine at the same depth is merged into it.
 *
 * Native (C/C++/Rust): entry uprobe + uretprobe, keyed by thread and SP at entry (recursion nests by SP).
 */
#include <linux/bpf.h>
#include <linux/errno.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "latency_abi.h"

/* Minimal CO-RE view of kernel types: only the fields read. */
struct thread_struct {
	unsigned long fsbase;
} __attribute__((preserve_access_index));

struct task_struct {
	struct thread_struct thread;
} __attribute__((preserve_access_index));

struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
} __attribute__((preserve_access_index));

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096); /* resized from Java before load */
	__type(key, __u32);
	__type(value, struct latency_probe);
} probes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536); /* resized from Java before load */
	__type(key, struct latency_key);
	__type(value, struct latency_call);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4096); /* as probes */
	__type(key, __u32);
	__type(value, struct latency_hist);
} histograms SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LSTAT_MAX);
	__type(key, __u32); /* enum latency_stat */
	__type(value, __u64);
} latency_stats SEC(".maps");

/* Read by nobody: puts enum latency_stat into the object's BTF for Java's ABI check. */
const volatile enum latency_stat latency_stat_count_for_btf = LSTAT_MAX;

static __always_inline void count(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&latency_stats, &which);
	if (v)
		*v += 1;
}

/* Number of bits needed for x (0 for 0). */
static __always_inline __u32 bit_length(__u64 x)
{
	__u32 n = 0;
	if (x >> 32) { n += 32; x >>= 32; }
	if (x >> 16) { n += 16; x >>= 16; }
	if (x >> 8) { n += 8; x >>= 8; }
	if (x >> 4) { n += 4; x >>= 4; }
	if (x >> 2) { n += 2; x >>= 2; }
	if (x >> 1) { n += 1; x >>= 1; }
	return n + (__u32)x;
}

/* Smallest k with ns <= 2^k us, i.e. ceil(ns / 1000) <= 2^k; LAT_FINITE_BUCKETS (+Inf) beyond 2^30 us. */
static __always_inline __u32 bucket_of(__u64 ns)
{
	__u64 us = (ns + 999) / 1000;
	if (us <= 1)
		return 0;
	__u32 k = bit_length(us - 1);
	return k < LAT_FINITE_BUCKETS ? k : LAT_FINITE_BUCKETS;
}

static __always_inline struct latency_probe *probe_of(struct pt_regs *ctx, __u32 *id)
{
	*id = (__u32)bpf_get_attach_cookie(ctx);
	struct latency_probe *p = bpf_map_lookup_elem(&probes, id);
	if (!p || !p->active) {
		count(LSTAT_UNCONFIGURED);
		return 0;
	}
	return p;
}

/* Go: goroutine id and stack depth of the current call; -1 if g cannot be read. */
static __always_inline int go_key(struct pt_regs *ctx, struct latency_probe *p, struct latency_key *key)
{
	__u64 g = 0, goid = 0, hi = 0;
	if (p->g_source == LAT_G_TLS) {
		struct task_struct *task = (struct task_struct *)bpf_get_current_task();
		unsigned long fsbase = BPF_CORE_READ(task, thread.fsbase);
		if (bpf_probe_read_user(&g, sizeof(g), (void *)(fsbase - 8)))
			return -1;
	} else {
		g = ctx->r14;
	}
	if (!g)
		return -1;
	/* runtime.g starts with stack {lo, hi} in every Go version. */
	if (bpf_probe_read_user(&hi, sizeof(hi), (void *)(g + 8)) ||
	    bpf_probe_read_user(&goid, sizeof(goid), (void *)(g + p->goid_offset)))
		return -1;
	key->id = goid;
	key->depth = hi - ctx->sp;
	return 0;
}

SEC("uprobe")
int latency_entry(struct pt_regs *ctx)
{
	__u32 id;
	struct latency_probe *p = probe_of(ctx, &id);
	if (!p)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct latency_key key = { .tgid = pid_tgid >> 32, .probe = id };
	__u32 kind = p->kind;
	if (kind == LAT_KIND_GO) {
		if (go_key(ctx, p, &key)) {
			count(LSTAT_G_READ_ERRORS);
			return 0;
		}
	} else {
		key.id = (__u32)pid_tgid;
		key.depth = ctx->sp;
	}
	struct latency_call call = { .start_ns = bpf_ktime_get_ns(), .tid = (__u32)pid_tgid };
	/* Insert first: the common case costs one hash operation; an existing key is the rare case. */
	long err = bpf_map_update_elem(&inflight, &key, &call, BPF_NOEXIST);
	if (err == -EEXIST) {
		if (kind == LAT_KIND_GO) {
			/* Same goroutine, same depth: the prologue restarted this call. Keep the first entry. */
			struct latency_call *old = bpf_map_lookup_elem(&inflight, &key);
			if (old)
				__sync_fetch_and_add(&old->reentries, 1);
			count(LSTAT_REENTRIES);
			return 0;
		}
		/* Same thread, same SP: the earlier call never returned through its uretprobe (longjmp). */
		count(LSTAT_STALE_REPLACED);
		err = bpf_map_update_elem(&inflight, &key, &call, BPF_ANY);
	}
	if (err) {
		count(LSTAT_INFLIGHT_FULL);
		return 0;
	}
	count(LSTAT_ENTRIES);
	return 0;
}

static __always_inline void finish(struct latency_key *key, __u32 tid)
{
	struct latency_call *call = bpf_map_lookup_elem(&inflight, key);
	if (!call) {
		count(LSTAT_UNMATCHED_EXITS);
		return;
	}
	__u64 start = call->start_ns;
	__u32 entry_tid = call->tid;
	bpf_map_delete_elem(&inflight, key);
	__u64 now = bpf_ktime_get_ns();
	__u64 ns = now > start ? now - start : 0;
	if (entry_tid != tid)
		count(LSTAT_MIGRATIONS);
	__u32 probe = key->probe;
	struct latency_hist *h = bpf_map_lookup_elem(&histograms, &probe);
	if (!h)
		return;
	__u32 b = bucket_of(ns);
	if (b < LAT_BUCKETS)
		h->buckets[b] += 1;
	h->sum_ns += ns;
	h->count += 1;
	count(LSTAT_EXITS);
}

SEC("uprobe")
int latency_exit_go(struct pt_regs *ctx)
{
	__u32 id;
	struct latency_probe *p = probe_of(ctx, &id);
	if (!p)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct latency_key key = { .tgid = pid_tgid >> 32, .probe = id };
	if (go_key(ctx, p, &key)) {
		count(LSTAT_G_READ_ERRORS);
		return 0;
	}
	finish(&key, (__u32)pid_tgid);
	return 0;
}

SEC("uretprobe")
int latency_exit(struct pt_regs *ctx)
{
	__u32 id;
	struct latency_probe *p = probe_of(ctx, &id);
	if (!p)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	/* The return popped the return address: SP is 8 above what the entry saw. */
	struct latency_key key = { .tgid = pid_tgid >> 32, .probe = id, .id = (__u32)pid_tgid, .depth = ctx->sp - 8 };
	finish(&key, (__u32)pid_tgid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
