// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Loupe CPU sampler. Attached to one PERF_TYPE_SOFTWARE/CPU_CLOCK event per online CPU.
 * Each sample streams one variable-length record (kernel frames, then user frames) to a ring
 * buffer; Java symbolizes and aggregates. Streaming (rather than in-kernel aggregation) lets
 * user space see every process while it is still alive, so short-lived processes resolve.
 *
 * The user stack walk is a bpf_loop over one per-frame step (unwind_step_fp). A table-driven
 * step (eh_frame rules shipped in maps) replaces that one function later.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "loupe_abi.h"

#define PF_KTHREAD 0x00200000

/* Minimal CO-RE view of kernel types: only the fields we read. */
struct task_struct {
	unsigned int flags;
	int pid;
	int tgid;
	struct task_struct *group_leader;
	char comm[TASK_COMM_LEN];
	__u64 start_boottime;
} __attribute__((preserve_access_index));

struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
} __attribute__((preserve_access_index));

/* UAPI layout of the perf_event program context on x86-64 (not relocated: the verifier
 * rewrites ctx accesses itself). */
struct user_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	__u64 ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};
struct perf_event_ctx {
	struct user_regs regs;
	__u64 sample_period;
	__u64 addr;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized from Java before load */
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sample);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_MAX);
	__type(key, enum stat); /* also puts enum stat into BTF for Java's check */
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} pid_filter SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);
	if (v)
		*v += 1;
}

/* Registers the unwinder carries from frame to frame. */
struct unwind_state {
	__u64 pc;
	__u64 sp;
	__u64 bp;
	__u32 base; /* index of the first user frame in sample.frames */
	__u32 n;    /* user frames written so far */
	__u32 flags;
};

/*
 * True if addr is a return address: the bytes before it are `call rel32` (e8) or `call *disp32(%rip)`
 * (ff 15). Text pages are normally resident; if not, the read fails and we say no.
 */
static __always_inline int is_return_address(__u64 addr)
{
	__u8 code[8];
	if (addr < 8 || bpf_probe_read_user(code, sizeof(code), (void *)(addr - 8)))
		return 0;
	return code[3] == 0xe8 || (code[2] == 0xff && code[3] == 0x15);
}

static __always_inline int push_frame(struct sample *s, struct unwind_state *st, __u64 pc)
{
	if (st->n >= MAX_USER_FRAMES) {
		st->flags |= SAMPLE_F_USER_TRUNCATED;
		return 0;
	}
	__u32 idx = st->base + st->n;
	if (idx >= MAX_FRAMES)
		return 0;
	s->frames[idx] = pc;
	st->n++;
	return 1;
}

/*
 * One frame-pointer step: record pc, then pc = [bp+8], bp = [bp]. Returns 1 to stop.
 * Frame pointers must strictly increase (the stack grows down), which also bounds bad chains.
 *
 * At the leaf, a function without its own frame (gcc's default -momit-leaf-frame-pointer, libc's
 * syscall wrappers) leaves bp pointing at its caller's frame, so the chain would skip the direct
 * caller. If [sp] is a return address, it is that caller.
 */
static long unwind_step_fp(__u32 i, struct unwind_state *st)
{
	__u32 zero = 0;
	struct sample *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 1;
	if (!push_frame(s, st, st->pc))
		return 1;
	__u64 frame[2] = {};
	int have_frame = st->bp != 0 && !bpf_probe_read_user(frame, sizeof(frame), (void *)st->bp);
	if (i == 0 && st->sp) {
		__u64 caller = 0;
		if (!bpf_probe_read_user(&caller, sizeof(caller), (void *)st->sp) && caller != frame[1] &&
		    is_return_address(caller) && !push_frame(s, st, caller))
			return 1;
	}
	if (st->bp == 0)
		return 1; /* outermost frame (_start clears rbp) */
	if (!have_frame) {
		st->flags |= SAMPLE_F_USER_READ_ERROR;
		return 1;
	}
	if (frame[1] == 0)
		return 1;
	if (frame[0] != 0 && frame[0] <= st->bp)
		return 1;
	st->sp = st->bp + 16;
	st->pc = frame[1];
	st->bp = frame[0];
	return 0;
}

SEC("perf_event")
int sample_cpu(struct perf_event_ctx *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u32 tid = (__u32)pid_tgid;
	__u32 zero = 0;

	if (tid == 0) { /* swapper: the CPU is idle */
		count(STAT_IDLE);
		return 0;
	}
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg)
		return 0;
	if (cfg->filter_pids && !bpf_map_lookup_elem(&pid_filter, &tgid)) {
		count(STAT_FILTERED);
		return 0;
	}
	count(STAT_SAMPLES);

	struct sample *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	struct task_struct *task = bpf_get_current_task_btf();

	s->pid = tgid;
	s->tid = tid;
	s->cpu = bpf_get_smp_processor_id();
	s->ktime_ns = bpf_ktime_get_ns();
	s->flags = 0;
	s->reserved = 0;
	bpf_get_current_comm(s->thread_comm, sizeof(s->thread_comm));
	bpf_core_read_str(s->comm, sizeof(s->comm), &task->group_leader->comm);
	s->start_boottime = BPF_CORE_READ(task, group_leader, start_boottime);

	int user_mode = (ctx->regs.cs & 3) == 3;
	__u32 nk = 0;
	if (!user_mode) {
		long n = bpf_get_stack(ctx, s->frames, MAX_KERNEL_FRAMES * sizeof(__u64), 0);
		if (n > 0)
			nk = n / sizeof(__u64);
		else if (n < 0) {
			count(STAT_KERNEL_ERRORS);
			s->flags |= SAMPLE_F_KERNEL_ERROR;
		}
	}
	if (nk > MAX_KERNEL_FRAMES)
		nk = MAX_KERNEL_FRAMES;
	s->kernel_frames = nk;

	struct unwind_state st = {};
	st.base = nk;
	if (!(task->flags & PF_KTHREAD)) {
		if (user_mode) {
			st.pc = ctx->regs.ip;
			st.sp = ctx->regs.sp;
			st.bp = ctx->regs.bp;
		} else {
			/* In the kernel: the user registers saved at kernel entry. */
			struct pt_regs *uregs = (struct pt_regs *)bpf_task_pt_regs(task);
			st.pc = BPF_CORE_READ(uregs, ip);
			st.sp = BPF_CORE_READ(uregs, sp);
			st.bp = BPF_CORE_READ(uregs, bp);
		}
		if (st.pc)
			bpf_loop(MAX_USER_FRAMES + 1, unwind_step_fp, &st, 0);
	}
	if (st.flags & SAMPLE_F_USER_TRUNCATED)
		count(STAT_USER_TRUNCATED);
	if (st.flags & SAMPLE_F_USER_READ_ERROR)
		count(STAT_USER_READ_ERRORS);
	s->flags |= st.flags;
	__u32 nu = st.n;
	if (nu > MAX_USER_FRAMES)
		nu = MAX_USER_FRAMES;
	s->user_frames = nu;

	__u64 size = __builtin_offsetof(struct sample, frames) + (__u64)(nk + nu) * sizeof(__u64);
	if (size > sizeof(*s))
		size = sizeof(*s);
	__u64 wake = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= cfg->wakeup_bytes
		? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_output(&samples, s, size, wake))
		count(STAT_RINGBUF_DROPS);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
