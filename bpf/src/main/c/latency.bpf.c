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
 *
 * Besides the exact per-probe histogram and fine histogram, each return is summed into a group {probe,
 * process, goroutine (Go), caller stack, bucket, fine bucket, generation} of the bounded groups map, which Java
 * drains each interval; a full map is counted and never touches the histograms. With stacks on, the entry
 * records the caller stack: at a function's first instruction the callee has not pushed RBP yet, so the
 * immediate caller is the return address at [SP], and RBP is still the caller's frame, whose chain gives the
 * callers above it.
 */
#include <linux/bpf.h>
#include <linux/errno.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "latency_abi.h"
#include "pid_ns.bpf.h"

/* Minimal CO-RE view of kernel types: only the fields read. */
struct thread_struct {
	unsigned long fsbase;
} __attribute__((preserve_access_index));

/* Pending uretprobes of the thread, innermost first: each replaced the return address at `stack`. */
struct return_instance {
	unsigned long stack;
	unsigned long orig_ret_vaddr;
	struct return_instance *next;
} __attribute__((preserve_access_index));

struct uprobe_task {
	struct return_instance *return_instances;
} __attribute__((preserve_access_index));

struct task_struct {
	struct thread_struct thread;
	struct uprobe_task *utask;
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

/* Shared by all CPUs, added to atomically: per CPU it would take 2 KiB per probe per CPU (latency_abi.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096); /* as probes */
	__type(key, __u32);
	__type(value, struct latency_fine_hist);
} fine_histograms SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768); /* resized from Java before load */
	__type(key, struct latency_group_key);
	__type(value, struct latency_group);
} groups SEC(".maps");

/* [0]: the generation new groups are written under (flipped by Java before each drain). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} group_gen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* resized from Java before load */
	__type(key, __u64);
	__type(value, struct latency_stack);
} stacks SEC(".maps");

/* A stack is built here (it does not fit the BPF stack), then copied into stacks. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct latency_stack);
} stack_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LSTAT_MAX);
	__type(key, __u32); /* enum latency_stat */
	__type(value, __u64);
} latency_stats SEC(".maps");

/* Read by nobody: its type puts every shared enum into the object's BTF for Java's ABI check. */
struct latency_constants latency_constants;

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

/*
 * The fine histogram's bucket of ns (latency_abi.h): with p = fls64(ns) - 1 (unrolled in bit_length, no loop),
 * 1 + (p - MIN_POWER) * SUB_BUCKETS + the 3 bits below the leading one.
 */
static __always_inline __u32 fine_bucket_of(__u64 ns)
{
	if (ns < (1ULL << LAT_FINE_MIN_POWER))
		return 0;
	if (ns >= (1ULL << LAT_FINE_MAX_POWER))
		return LAT_FINE_BUCKETS - 1;
	__u32 p = bit_length(ns) - 1;
	__u32 sub = (ns >> (p - 3)) & (LAT_FINE_SUB_BUCKETS - 1);
	return 1 + (p - LAT_FINE_MIN_POWER) * LAT_FINE_SUB_BUCKETS + sub;
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

static __always_inline __u64 mix(__u64 h, __u64 v)
{
	h ^= v;
	h *= 0x100000001b3ULL; /* FNV-1a prime, on whole words */
	return h ^ (h >> 29);
}

/*
 * The caller stack at a function's first instruction: its entry, the return address at [SP] (the immediate
 * caller: RBP is not pushed yet), then the frame-pointer chain from RBP (the caller's frame). Stored once per
 * distinct stack; returns its id, or LAT_STACK_LOST when the stacks map is full.
 */
/*
 * A pending uretprobe replaced the return address stored at `slot` by its trampoline (our own native exit
 * probes do this to every probed caller): the original is in the thread's return_instance for that slot.
 * Slots grow outward and the list runs innermost first, so one cursor serves the whole walk.
 */
static __always_inline __u64 unhijack(__u64 slot, __u64 v, struct return_instance **cursor)
{
	struct return_instance *ri = *cursor;
	for (int j = 0; j < 8 && ri; j++) {
		__u64 at = BPF_CORE_READ(ri, stack);
		if (at > slot)
			break;
		if (at == slot) {
			v = BPF_CORE_READ(ri, orig_ret_vaddr);
			ri = BPF_CORE_READ(ri, next);
			break;
		}
		ri = BPF_CORE_READ(ri, next);
	}
	*cursor = ri;
	return v;
}

static __always_inline __u64 capture_stack(struct pt_regs *ctx, __u32 tgid)
{
	__u32 zero = 0;
	struct latency_stack *s = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!s)
		return LAT_STACK_LOST;
	__u64 ip = ctx->ip, ret = 0, fp = ctx->bp;
	__u64 h = mix(0xcbf29ce484222325ULL, tgid);
	__u32 n = 1;
	s->tgid = tgid;
	s->addrs[0] = ip;
	h = mix(h, ip);
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct return_instance *ri = BPF_CORE_READ(task, utask, return_instances);
	if (!bpf_probe_read_user(&ret, sizeof(ret), (void *)ctx->sp) && ret) {
		if (ri)
			ret = unhijack(ctx->sp, ret, &ri);
		s->addrs[1] = ret;
		h = mix(h, ret);
		n = 2;
		for (int i = 0; i < LAT_STACK_MAX - 2; i++) {
			__u64 frame[2]; /* saved RBP, return address */
			if (!fp || bpf_probe_read_user(frame, sizeof(frame), (void *)fp) || !frame[1])
				break;
			if (ri)
				frame[1] = unhijack(fp + 8, frame[1], &ri);
			s->addrs[n & (LAT_STACK_MAX - 1)] = frame[1];
			h = mix(h, frame[1]);
			n++;
			if (frame[0] <= fp) /* callers' frames are above: anything else ends the chain */
				break;
			fp = frame[0];
		}
	}
	s->depth = n;
	if (h <= LAT_STACK_LOST)
		h += 2;
	long err = bpf_map_update_elem(&stacks, &h, s, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		count(LSTAT_STACKS_FULL);
		return LAT_STACK_LOST;
	}
	return h;
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
	struct latency_call call = { .tid = (__u32)pid_tgid };
	/* Stacks are for Java to symbolize through /proc: none for a process outside its PID namespace. */
	__u64 java_ids = pid_tgid;
	if (p->stacks && !to_java_pids(&java_ids))
		call.stack_id = capture_stack(ctx, java_ids >> 32);
	call.start_ns = bpf_ktime_get_ns(); /* after the stack walk: its cost is not the function's */
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

/* java_tgid: the process as Java's /proc names it (0: outside its PID namespace); key->tgid is the kernel's. */
static __always_inline void add_to_group(struct latency_key *key, __u32 java_tgid, __u64 goid, __u64 stack_id,
					 __u32 bucket, __u32 fine_bucket, __u64 ns)
{
	__u32 zero = 0;
	__u32 *gen = bpf_map_lookup_elem(&group_gen, &zero);
	struct latency_group_key gk = {
		.probe = key->probe, .tgid = java_tgid, .goid = goid, .stack_id = stack_id, .bucket = bucket,
		.fine_bucket = fine_bucket, .gen = gen ? *gen : 0,
	};
	struct latency_group *g = bpf_map_lookup_elem(&groups, &gk);
	if (!g) {
		struct latency_group fresh = { .count = 1, .sum_ns = ns };
		bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
		long err = bpf_map_update_elem(&groups, &gk, &fresh, BPF_NOEXIST);
		if (!err)
			return;
		g = err == -EEXIST ? bpf_map_lookup_elem(&groups, &gk) : 0; /* another CPU created it first */
		if (!g) {
			count(LSTAT_GROUPS_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&g->count, 1);
	__sync_fetch_and_add(&g->sum_ns, ns);
}

static __always_inline void finish(struct latency_key *key, __u64 pid_tgid, __u64 goid)
{
	__u32 tid = (__u32)pid_tgid;
	struct latency_call *call = bpf_map_lookup_elem(&inflight, key);
	if (!call) {
		count(LSTAT_UNMATCHED_EXITS);
		return;
	}
	__u64 start = call->start_ns;
	__u32 entry_tid = call->tid;
	__u64 stack_id = call->stack_id;
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
	__u32 fb = fine_bucket_of(ns);
	struct latency_fine_hist *fh = bpf_map_lookup_elem(&fine_histograms, &probe);
	if (fh && fb < LAT_FINE_BUCKETS)
		__sync_fetch_and_add(&fh->buckets[fb], 1);
	count(LSTAT_EXITS);
	to_java_pids(&pid_tgid);
	add_to_group(key, pid_tgid >> 32, goid, stack_id, b, fb, ns);
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
	finish(&key, pid_tgid, key.id);
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
	finish(&key, pid_tgid, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
