// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Loupe CPU sampler. Attached to one PERF_TYPE_SOFTWARE/CPU_CLOCK event per online CPU.
 * Each sample streams one variable-length record (kernel frames, then user frames) to a ring
 * buffer; Java symbolizes and aggregates. Streaming (rather than in-kernel aggregation) lets
 * user space see every process while it is still alive, so short-lived processes resolve.
 *
 * Two programs, one of which Java loads. In sample_cpu the user stack walk is a bpf_loop over one
 * per-frame step (unwind_step): per mapping it uses the binary's unwind table (compiled from .eh_frame in
 * Java, shipped in the unwind_* maps) or frame pointers (JIT/anonymous code, Go), and a process Java has
 * not registered yet is walked with frame pointers alone (fp_only_step). sample_cpu_fp
 * (--unwind-tables off) always walks with frame pointers alone.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "loupe_abi.h"
#include "pid_ns.bpf.h"

#define PF_KTHREAD 0x00200000

/* Minimal CO-RE view of kernel types: only the fields we read. */
typedef struct {
	int counter;
} loupe_atomic_t;

struct signal_struct {
	loupe_atomic_t live; /* threads of the group that have not passed do_exit's group_dead point */
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int flags;
	int pid;
	int tgid;
	struct task_struct *group_leader;
	struct signal_struct *signal;
	char comm[TASK_COMM_LEN];
	__u64 start_boottime;
	struct mm_struct *mm;
} __attribute__((preserve_access_index));

/* What bpf_find_vma gives: the mapping, its file's identity and the process's vdso (CO-RE, only what is read). */
struct super_block {
	__u32 s_dev; /* dev_t: MAJOR << 20 | MINOR */
} __attribute__((preserve_access_index));

struct timespec64 {
	__s64 tv_sec;
	long tv_nsec;
} __attribute__((preserve_access_index));

struct inode {
	unsigned long i_ino;
	struct super_block *i_sb;
	__s64 i_size;
} __attribute__((preserve_access_index));

/* The inode's mtime moved twice: i_mtime (to 6.6), __i_mtime (6.7 to 6.10), i_mtime_sec/_nsec (6.11 on). */
struct inode___mtime_sec {
	__s64 i_mtime_sec;
	__u32 i_mtime_nsec;
} __attribute__((preserve_access_index));
struct inode___mtime_private {
	struct timespec64 __i_mtime;
} __attribute__((preserve_access_index));
struct inode___mtime_timespec {
	struct timespec64 i_mtime;
} __attribute__((preserve_access_index));

struct file {
	struct inode *f_inode;
} __attribute__((preserve_access_index));

typedef struct {
	void *vdso;
} __attribute__((preserve_access_index)) mm_context_t;

struct mm_struct {
	mm_context_t context;
} __attribute__((preserve_access_index));

struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_end;
	struct mm_struct *vm_mm;
	unsigned long vm_flags;
	unsigned long vm_pgoff;
	struct file *vm_file;
} __attribute__((preserve_access_index));

#define VM_EXEC 0x4
#define ENOENT 2 /* bpf_find_vma: no mapping holds the address */
#define PAGE_SHIFT 12
/* An unregistered process older than this asks for a registration: its walk then searches its own slice (cheaper
 * for the long-lived; the short-lived never need one). */
#define REGISTER_AFTER_NS (1000ULL * 1000 * 1000)
/* A process running a runtime's file that needs the process (FILE_F_NEEDS_PROCESS: libjvm.so, whose interpreter
 * and code heaps are the process's own) asks for its registration once it has lived this long: most short JVMs of a
 * churn exit before a registration could finish or pay off, and their native stacks are walked by the files' tables
 * meanwhile. (A JIT's anonymous code asks at once: it cannot be walked without its runtime's tables. An interpreter
 * whose binary's table walks its frames for every process, CPython's, needs no registration at all.) */
#define RUNTIME_REGISTER_AFTER_NS (1000ULL * 1000 * 1000)

/*
 * Reading a process's memory map from a sample is limited: it runs in the timer interrupt, where the mmap lock can
 * only be tried and its release is deferred to one irq_work per CPU, so one bpf_find_vma per sample can succeed (a
 * second finds the work busy) and the VMA iterator refuses irqs-disabled contexts. So the kernel side reads each
 * process's executable mappings in process context, with the VMA iterator (Linux 6.7+), whenever they change the way
 * programs change them: at exec (the binary, ld.so, the vdso) and when glibc has mapped libraries (uprobes: the
 * libraries a program needs, before main, and a dlopen's, at the dlsym that follows it); copied at fork,
 * dropped at exit (proc_maps). A sample finds its pcs there, and spends its one bpf_find_vma on a pc that is not (a
 * process that started before the agent, code mapped otherwise: a JIT's). LOUPE_VMA_ITER 0 builds the object for kernels
 * without the iterator: there processes are registered by Java, as before file tables.
 */
#ifndef LOUPE_VMA_ITER
#define LOUPE_VMA_ITER 1
#endif
#if LOUPE_VMA_ITER
struct bpf_iter_task_vma {
	__u64 __opaque[1];
} __attribute__((aligned(8)));
extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task, __u64 addr) __ksym;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __ksym;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __ksym;
#endif

/* A process's executable mapping as the kernel side followed it: range, file identity, kind (SAMPLED_*). */
struct pmap_entry {
	__u64 start;
	__u64 end;
	__u64 offset;
	__u64 dev;
	__u64 ino;
	__s64 size;
	__s64 mtime_sec;
	__u32 mtime_nsec;
	__u32 kind;
};
#define MAX_PMAP 32
struct proc_maps {
	__u64 mm;  /* the mm they are of: an exec replaces it */
	__u32 n;
	__u32 overflow; /* more executable mappings were made than kept */
	struct pmap_entry e[MAX_PMAP];
};

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
	__type(key, __u32); /* enum stat */
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

/* Read by nobody: its type puts every shared enum into the object's BTF for Java's ABI check. */
struct abi_constants abi_constants;

/* When a sample last forced a ring buffer wakeup for a process without unwind state (racy by design: a
 * lost update only costs one more wakeup). */
__u64 last_fallback_wakeup_ns;
__s64 last_vma_iter_error;

/* Unwind tables and per-process mappings; sizes are set from Java before load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct unwind_table);
} unwind_tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 16);
	__type(key, __u32);
	__type(value, struct unwind_page);
} unwind_pages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 20);
	__type(key, __u32);
	__type(value, __u32);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 18);
	__type(key, __u32);
	__type(value, __u64);
} unwind_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 16);
	__type(key, __u32);
	__type(value, struct exec_mapping);
} mappings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 14);
	__type(key, __u32);
	__type(value, struct proc_unwind);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 13);
	__type(key, struct file_key);
	__type(value, struct file_table);
} file_tables SEC(".maps");

/* Each process's executable mappings, by its kernel tgid, for processes that exec'd (or forked from one that did) since
 * the agent started; written in process context only (exec, mmap, fork), deleted at exit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 14);
	__type(key, __u32);
	__type(value, struct proc_maps);
} proc_maps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct proc_maps);
} proc_maps_scratch SEC(".maps");

static __always_inline void add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);
	if (v)
		*v += n;
}

static __always_inline void count(__u32 which)
{
	add(which, 1);
}

/* What every walk carries from frame to frame (frame pointers need nothing else). */
struct walk {
	__u64 pc;
	__u64 sp;
	__u64 bp;
	__u32 base; /* index of the first user frame in sample.frames */
	__u32 n;    /* user frames written so far */
	__u32 flags;
	__u32 fp_frames;
	__u8 bp_known;  /* RBP holds this frame's value (unknown after an undescribed restore) */
	__u8 exact_pc;  /* pc is exact (leaf, or interrupted by a signal), not a return address */
	__u8 pad[6];
};

/* A walk that may use unwind tables: the registers plus the process's mappings and a one-mapping cache. */
struct unwind_state {
	struct walk w;
	__u32 proc_first; /* the process's slice of mappings */
	__u32 proc_count;
	__u32 table_frames;
	__u32 no_fde_frames; /* frames stepped by no_fde_step */
	/*
	 * The last mapping found and its table's header, copied here (most frames of a stack are in one
	 * binary): a frame whose pc is in [m_start, m_end) skips the mapping search and the table lookup.
	 * Empty (m_end == m_start == 0) until the first search succeeds.
	 */
	__u64 m_start;
	__u64 m_end;
	__u64 m_bias;
	__u32 m_kind;
	__u32 m_table_id;
	__u64 t_pc_base;
	__u32 t_page_start;
	__u32 t_page_count; /* 0: no table (not loaded, evicted) */
	__u32 t_row_start;
	__u32 t_rule_start;
	__u8 registered;     /* the process has a procs entry (its slice of mappings) */
	__u8 vma_used;       /* this sample's one bpf_find_vma was spent */
	__u8 young;          /* the process started less than RUNTIME_REGISTER_AFTER_NS ago */
	__u8 tagged;         /* a runtime's step reported frames user space names from the process's memory */
	__u64 leaf_r13;      /* the leaf's R13: HotSpot's interpreter keeps the bcp there (hotspot.bpf.h) */
	__u32 host_tgid;     /* the kernel's tgid: proc_maps' key */
	__u64 mm;            /* the process's mm: proc_maps' entry must be of it */
	__u32 vma_lookups;   /* mappings found in proc_maps or by bpf_find_vma */
	__u32 vma_failures;  /* pcs found in neither */
	__u32 file_misses;   /* of files without a (current) table in file_tables */
	__u32 n_found;       /* entries in found */
	/* Fields above are zeroed per sample; found[] only up to n_found is ever read. */
	struct found_mapping {
		__u64 start;
		__u64 end;
		__u64 bias;
		__u64 offset;
		__u64 dev;
		__u64 ino;
		__u32 kind;     /* MAPPING_* */
		__u32 table_id;
		__u32 sampled_kind; /* SAMPLED_* */
		__u32 reserved;
	} found[MAX_SAMPLE_MAPPINGS]; /* the mappings this walk used: cached for it, carried by the record */
	struct pmap_entry tmp; /* a mapping being resolved (here, not on the stack: the call chain's stack is small) */
};

/*
 * The walk's state, per CPU (a perf_event program does not nest on a CPU). In a map value rather than on
 * the stack so that the verifier tracks none of its values: every unwind_step starts from the same
 * verifier state, so the step is verified once, not once per combination of values the caller's stack
 * could hold after each earlier step (which had brought the program close to the 1M-instruction limit).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_state);
} unwind_scratch SEC(".maps");

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

static __always_inline int push_frame(struct sample *s, struct walk *st, __u64 pc)
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
 * One frame-pointer step from the current frame (already pushed): pc = [bp+8], bp = [bp].
 * Returns 1 to stop. Frame pointers must strictly increase (the stack grows down), which also bounds
 * bad chains.
 *
 * At the leaf, a function without its own frame (gcc's default -momit-leaf-frame-pointer, libc's
 * syscall wrappers) leaves bp pointing at its caller's frame, so the chain would skip the direct
 * caller. If [sp] is a return address, it is that caller.
 */
static __always_inline long fp_step(__u32 i, struct walk *st, struct sample *s)
{
	__u64 frame[2] = {};
	int have_frame = st->bp_known && st->bp != 0 && !bpf_probe_read_user(frame, sizeof(frame), (void *)st->bp);
	st->fp_frames++;
	if (i == 0 && st->sp) {
		__u64 caller = 0;
		if (!bpf_probe_read_user(&caller, sizeof(caller), (void *)st->sp) && caller != frame[1] &&
		    is_return_address(caller) && !push_frame(s, st, caller))
			return 1;
	}
	if (st->bp == 0 || !st->bp_known)
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
	st->exact_pc = 0;
	return 0;
}

/* Ends the walk with a marker frame naming why (not for a normal end of stack). */
static __always_inline long unwind_stop(struct walk *st, struct sample *s, __u32 reason)
{
	if (reason != STOP_END_OF_STACK && reason != STOP_ZERO_RA) {
		if (push_frame(s, st, UNWIND_MARKER | reason))
			st->flags |= SAMPLE_F_UNWIND_STOPPED;
	}
	return 1;
}

/* Makes a mapping the cached one: copies it and its table's header into st. */
static __always_inline void use_mapping(struct unwind_state *st, __u64 start, __u64 end, __u64 bias, __u32 kind,
					__u32 table_id)
{
	st->m_start = start;
	st->m_end = end;
	st->m_bias = bias;
	st->m_kind = kind;
	st->m_table_id = table_id;
	st->t_page_count = 0;
	if (kind == MAPPING_TABLE) {
		struct unwind_table *t = bpf_map_lookup_elem(&unwind_tables, &table_id);
		if (t) {
			st->t_pc_base = t->pc_base;
			st->t_page_start = t->page_start;
			st->t_page_count = t->page_count;
			st->t_row_start = t->row_start;
			st->t_rule_start = t->rule_start;
		}
	}
}

/* The registered process's mapping containing pc (binary search over its sorted slice); 0 if none. */
static __always_inline int slice_mapping(struct unwind_state *st, __u64 pc)
{
	/* Binary search: lo ends at the last mapping whose start is <= pc. */
	__u32 lo = st->proc_first, hi = st->proc_first + st->proc_count;
#pragma clang loop unroll(disable)
	for (int k = 0; k < MAPPING_SEARCH_STEPS && hi - lo > 1; k++) {
		__u32 mid = lo + (hi - lo) / 2;
		struct exec_mapping *mm = bpf_map_lookup_elem(&mappings, &mid);
		if (!mm)
			return 0;
		if (mm->start <= pc)
			lo = mid;
		else
			hi = mid;
	}
	struct exec_mapping *m = bpf_map_lookup_elem(&mappings, &lo);
	if (!m || pc < m->start || pc >= m->end)
		return 0;
	use_mapping(st, m->start, m->end, m->bias, m->kind, m->table_id);
	return 1;
}

/* A file's identity, size and mtime, as the walker keys its table. */
static __always_inline void read_file(struct file *file, struct pmap_entry *e)
{
	struct inode *inode = BPF_CORE_READ(file, f_inode);
	e->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	e->ino = BPF_CORE_READ(inode, i_ino);
	e->size = BPF_CORE_READ(inode, i_size);
	if (bpf_core_field_exists(((struct inode___mtime_sec *)0)->i_mtime_sec)) {
		struct inode___mtime_sec *i = (void *)inode;
		e->mtime_sec = BPF_CORE_READ(i, i_mtime_sec);
		e->mtime_nsec = BPF_CORE_READ(i, i_mtime_nsec);
	} else if (bpf_core_field_exists(((struct inode___mtime_private *)0)->__i_mtime)) {
		struct inode___mtime_private *i = (void *)inode;
		e->mtime_sec = BPF_CORE_READ(i, __i_mtime.tv_sec);
		e->mtime_nsec = BPF_CORE_READ(i, __i_mtime.tv_nsec);
	} else {
		struct inode___mtime_timespec *i = (void *)inode;
		e->mtime_sec = BPF_CORE_READ(i, i_mtime.tv_sec);
		e->mtime_nsec = BPF_CORE_READ(i, i_mtime.tv_nsec);
	}
}

/* An executable VMA as a pmap_entry (0 if it is not executable). */
static __always_inline int read_vma(struct vm_area_struct *vma, struct pmap_entry *e)
{
	if (!(BPF_CORE_READ(vma, vm_flags) & VM_EXEC))
		return 0;
	e->start = BPF_CORE_READ(vma, vm_start);
	e->end = BPF_CORE_READ(vma, vm_end);
	struct file *file = BPF_CORE_READ(vma, vm_file);
	if (!file) {
		e->kind = (__u64)BPF_CORE_READ(vma, vm_mm, context.vdso) == e->start ? SAMPLED_VDSO : SAMPLED_ANON;
		return 1;
	}
	e->kind = SAMPLED_FILE;
	e->offset = (__u64)BPF_CORE_READ(vma, vm_pgoff) << PAGE_SHIFT;
	read_file(file, e);
	return 1;
}

/* bpf_find_vma's callback: the mapping goes into the walk's state (its context must be on the stack, which is small). */
static long find_vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	__u32 zero = 0;
	struct unwind_state *st = bpf_map_lookup_elem(&unwind_scratch, &zero);
	if (st)
		read_vma(vma, &st->tmp);
	return 0;
}

/*
 * Makes e the walk's found mapping (and cached one): its table by the file's identity (file_tables: device and
 * inode, valid if size and mtime match), or frame pointers for anonymous code and a file without a current table; the
 * sample notes what Java should do about it (SAMPLE_F_FP_FALLBACK, SAMPLE_F_NEEDS_PROCESS) and carries it (the first
 * MAX_SAMPLE_MAPPINGS) so its frames can be named after the process exited.
 */
static __noinline int use_found(struct unwind_state *st, struct pmap_entry *e)
{
	__u32 kind = MAPPING_FP, table_id = 0;
	__u64 bias = 0;
	st->vma_lookups++;
	if (e->kind == SAMPLED_ANON) {
		/* A JIT's code, walked with frame pointers until the process is registered with its runtime's tables: the
		 * sample is a fallback, as before file tables. */
		if (!st->registered)
			st->w.flags |= SAMPLE_F_NEEDS_PROCESS | SAMPLE_F_FP_FALLBACK;
	} else {
		struct file_key key = {VDSO_KEY_DEV, VDSO_KEY_INO};
		if (e->kind == SAMPLED_FILE) {
			key.dev = e->dev;
			key.ino = e->ino;
		}
		struct file_table *ft = bpf_map_lookup_elem(&file_tables, &key);
		if (!ft || (e->kind == SAMPLED_FILE && (ft->size != (__u64)e->size || ft->mtime_sec != e->mtime_sec ||
							ft->mtime_nsec != e->mtime_nsec))) {
			st->w.flags |= SAMPLE_F_FP_FALLBACK;
			st->file_misses++;
		} else {
			kind = ft->kind;
			table_id = ft->table_id;
			bias = e->start - e->offset - ft->vaddr_delta;
			/* A runtime's file that needs the process is walked natively by its table; the runtime's own frames
			 * come with the process's registration. */
			if ((ft->flags & FILE_F_NEEDS_PROCESS) && !st->registered && !st->young)
				st->w.flags |= SAMPLE_F_NEEDS_PROCESS;
		}
	}
	__u32 i = st->n_found;
	if (i < MAX_SAMPLE_MAPPINGS) {
		struct found_mapping *f = &st->found[i];
		f->start = e->start;
		f->end = e->end;
		f->bias = bias;
		f->offset = e->offset;
		f->dev = e->dev;
		f->ino = e->ino;
		f->kind = kind;
		f->table_id = table_id;
		f->sampled_kind = e->kind;
		f->reserved = 0;
		st->n_found = i + 1;
	}
	use_mapping(st, e->start, e->end, bias, kind, table_id);
	return 1;
}

/* A mapping this walk used before (a stack goes back and forth between a binary and its libraries). */
static __always_inline int found_before(struct unwind_state *st, __u64 pc)
{
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < MAX_SAMPLE_MAPPINGS; i++) {
		if (i >= st->n_found)
			return 0;
		struct found_mapping *f = &st->found[i];
		if (pc - f->start < f->end - f->start) {
			use_mapping(st, f->start, f->end, f->bias, f->kind, f->table_id);
			return 1;
		}
	}
	return 0;
}

/*
 * The process's executable mapping containing pc, as proc_maps followed it (if it has an entry of its current mm),
 * else as this sample's one bpf_find_vma finds it. Returns 0 if neither knows one. A pc no mapping holds at all (the
 * memory map says so) is no code: a stale or guessed return address, which says nothing about the process. Otherwise
 * the miss is noted (frame pointers from here, SAMPLE_F_FP_FALLBACK: user space loads the process's files), and a
 * process the kernel does not follow asks for its registration; unless `probe` (a guessed return address, which may
 * well be garbage, is only being tried).
 */
static __noinline int find_mapping(struct unwind_state *st, __u64 pc, int probe)
{
	__u32 tgid = st->host_tgid;
	struct proc_maps *pm = bpf_map_lookup_elem(&proc_maps, &tgid);
	int followed = pm && pm->mm == st->mm;
	if (pm && followed) {
		__u32 n = pm->n;
#pragma clang loop unroll(disable)
		for (__u32 i = 0; i < MAX_PMAP; i++) {
			if (i >= n)
				break;
			struct pmap_entry *e = &pm->e[i];
			if (pc - e->start < e->end - e->start) {
				st->tmp = *e; /* the entry may change under us (an exec or dlopen on another CPU) */
				return use_found(st, &st->tmp);
			}
		}
	}
	if (!st->vma_used) {
		st->vma_used = 1;
		__builtin_memset(&st->tmp, 0, sizeof(st->tmp));
		struct task_struct *task = bpf_get_current_task_btf();
		__u64 unused = 0;
		long err = bpf_find_vma(task, pc, find_vma_cb, &unused, 0);
		if (err == 0 && st->tmp.end)
			return use_found(st, &st->tmp);
		if (err == -ENOENT)
			return 0; /* in no mapping: no code there */
	}
	if (probe)
		return 0;
	st->vma_failures++;
	st->w.flags |= SAMPLE_F_FP_FALLBACK; /* frame pointers from here, for want of the mapping */
	/* Not followed at all (it started before the agent): its registration. (An entry of another mm is an exec in
	 * progress, followed again in a moment.) */
	if (!st->registered && !pm)
		st->w.flags |= SAMPLE_F_NEEDS_PROCESS;
	return 0;
}

/*
 * Finds the mapping containing pc and copies it and its table's header into st: the process's registered slice
 * first, then the mappings this walk used, then the process's followed mappings or its memory map. Returns 0 if none
 * contains pc; `probe`: pc is a guess (find_mapping).
 */
static __always_inline int load_mapping(struct unwind_state *st, __u64 pc, int probe)
{
	if (st->proc_count && slice_mapping(st, pc))
		return 1;
	return found_before(st, pc) || find_mapping(st, pc, probe);
}

#define RULE_NOT_COVERED 0xffULL

/* The rule for a file vaddr in st's table: page by pc >> 16, then a bounded search of the page's rows. */
static __always_inline __u64 table_rule(struct unwind_state *st, __u64 vaddr)
{
	if (st->t_page_count == 0 || vaddr < st->t_pc_base)
		return RULE_NOT_COVERED;
	__u64 p = (vaddr - st->t_pc_base) >> 16;
	if (p >= st->t_page_count)
		return RULE_NOT_COVERED;
	__u32 pidx = st->t_page_start + (__u32)p;
	struct unwind_page *pg = bpf_map_lookup_elem(&unwind_pages, &pidx);
	if (!pg)
		return RULE_NOT_COVERED;
	if (pg->row_count == 0)
		return RULE_STOP | ((__u64)STOP_NO_UNWIND_INFO << 8);
	/* Binary search: lo ends at the page's last row whose pc_low is <= the key (the first row's is 0). */
	__u32 key = vaddr & 0xffff;
	__u32 lo = st->t_row_start + pg->first_row, hi = lo + pg->row_count;
#pragma clang loop unroll(disable)
	for (int k = 0; k < ROW_SEARCH_STEPS && hi - lo > 1; k++) {
		__u32 mid = lo + (hi - lo) / 2;
		__u32 *r = bpf_map_lookup_elem(&unwind_rows, &mid);
		if (!r)
			return RULE_NOT_COVERED;
		if ((*r & 0xffff) <= key)
			lo = mid;
		else
			hi = mid;
	}
	__u32 *row = bpf_map_lookup_elem(&unwind_rows, &lo);
	if (!row)
		return RULE_NOT_COVERED;
	__u32 ridx = st->t_rule_start + (*row >> 16);
	__u64 *rule = bpf_map_lookup_elem(&unwind_rules, &ridx);
	return rule ? *rule : RULE_NOT_COVERED;
}

/*
 * A PC its binary's table has no unwind info for (no FDE: V8's builtins, hand-written assembly). Such code
 * often keeps a frame pointer, so take one frame-pointer step, but only if the frame looks like a real one,
 * since nothing describes this code:
 *  - bp is known and the frame {saved rbp, return address} at bp lies at or above sp, less than
 *    NO_FDE_MAX_FRAME_BYTES above it, and is readable;
 *  - the saved rbp is 0 (outermost frame) or above bp (the stack grows down);
 *  - the return address is in one of the process's executable mappings (found by load_mapping, which
 *    leaves it cached for the next step);
 *  - if that mapping has a table and the return address follows a direct `call rel32`, the call's target is
 *    not a function the table describes (CFA rule or signal frame): a caller that called a function with an
 *    FDE did not call this code directly, so bp is not this code's frame but an ancestor's (code that keeps
 *    no frame pointer leaves its caller's bp in place).
 * Otherwise the walk stops with STOP_NO_UNWIND_INFO, as without the step. Returns 1 to stop.
 */
static __always_inline long no_fde_step(struct unwind_state *st, struct sample *s)
{
	__u64 bp = st->w.bp;
	__u64 frame[2] = {}; /* saved rbp, return address */
	if (!st->w.bp_known || bp == 0 || bp < st->w.sp || bp - st->w.sp >= NO_FDE_MAX_FRAME_BYTES ||
	    bpf_probe_read_user(frame, sizeof(frame), (void *)bp))
		goto stop;
	if (frame[0] != 0 && frame[0] <= bp)
		goto stop;
	__u64 ra = frame[1];
	if (ra == 0 || !load_mapping(st, ra - 1, 1))
		goto stop;
	if (st->m_kind == MAPPING_TABLE) {
		__u64 code = 0; /* the 8 bytes before ra: a direct call is e8 and its rel32 in the last 5 */
		if (bpf_probe_read_user(&code, sizeof(code), (void *)(ra - 8)))
			goto stop;
		if (((code >> 24) & 0xff) == 0xe8) {
			__u64 target = ra + (__s64)(__s32)(code >> 32);
			if (target - st->m_start < st->m_end - st->m_start) {
				__u32 kind = table_rule(st, target - st->m_bias) & 0xff;
				if (kind == RULE_CFA_RSP || kind == RULE_CFA_RBP || kind == RULE_SIGNAL)
					goto stop;
			}
		}
	}
	st->w.sp = bp + 16;
	st->w.pc = ra;
	st->w.bp = frame[0];
	st->w.bp_known = 1;
	st->w.exact_pc = 0;
	st->no_fde_frames++;
	return 0;
stop:
	st->table_frames++; /* a stop row's frame, counted as before this step existed */
	return unwind_stop(&st->w, s, STOP_NO_UNWIND_INFO);
}

/*
 * Runtimes' frames: one step per runtime, each in its own header (included here, where the walk's state and helpers
 * are defined), dispatched on the rule kind from this one place. A new runtime adds its header, its kinds in
 * loupe_abi.h's enum rule_kind, and a case here.
 */
/* A runtime step's return when it reported its frames and the native frame is stepped by the rule's native kind
 * (the aux byte's high nibble; its low nibble the RBP rule). */
#define RUNTIME_STEP_NATIVE 2

#include "hotspot.bpf.h"
#include "python.bpf.h"
#include "v8.bpf.h"

static __always_inline long runtime_step(__u64 rule, struct unwind_state *st, struct sample *s)
{
	switch (rule & 0xff) {
	case RULE_JAVA_INTERP:
		return hotspot_interp_step(st, s, rule);
	case RULE_HOTSPOT_CODE:
		return hotspot_code_step(st, s);
	case RULE_PYTHON_EVAL:
		return python_eval_step(st, s);
	case RULE_V8_FRAME:
		return v8_frame_step(st, s, (rule >> 8) & 0xff);
	default:
		return unwind_stop(&st->w, s, STOP_MALFORMED);
	}
}

/* One table step: caller's pc/sp/bp from the rule at pc (no_fde_step where it has no unwind info). Returns 1
 * to stop. */
static __always_inline long table_step(struct unwind_state *st, struct sample *s, __u64 lookup_pc)
{
	__u64 rule = table_rule(st, lookup_pc - st->m_bias);
	if (rule == RULE_NOT_COVERED)
		return unwind_stop(&st->w, s, STOP_NO_TABLE);
	__u32 kind = rule & 0xff;
	__u32 aux = (rule >> 8) & 0xff;
	__s16 rbp_off = (__s16)(rule >> 16);
	__s32 cfa_off = (__s32)(rule >> 32);
	__u64 cfa;
	if (kind == RULE_STOP && aux == STOP_NO_UNWIND_INFO)
		return no_fde_step(st, s);
	if (kind >= RULE_RUNTIME_FIRST) {
		long r = runtime_step(rule, st, s);
		if (r != RUNTIME_STEP_NATIVE)
			return r;
		kind = aux >> 4;
		aux &= 0xf;
	}
	st->table_frames++;
	switch (kind) {
	case RULE_CFA_RSP:
		cfa = st->w.sp + (__s64)cfa_off;
		break;
	case RULE_CFA_RBP:
		if (!st->w.bp_known)
			return unwind_stop(&st->w, s, STOP_RBP_UNKNOWN);
		cfa = st->w.bp + (__s64)cfa_off;
		break;
	case RULE_PLT:
		cfa = st->w.sp + 8 + ((st->w.pc & 15) >= (__u64)cfa_off ? 8 : 0);
		break;
	case RULE_SIGNAL: {
		__u64 regs[3] = {};
		if (bpf_probe_read_user(&regs[0], 8, (void *)(st->w.sp + SIGNAL_RIP_OFFSET)) ||
		    bpf_probe_read_user(&regs[1], 8, (void *)(st->w.sp + SIGNAL_RSP_OFFSET)) ||
		    bpf_probe_read_user(&regs[2], 8, (void *)(st->w.sp + SIGNAL_RBP_OFFSET)))
			return unwind_stop(&st->w, s, STOP_READ_FAILED);
		if (regs[0] == 0)
			return unwind_stop(&st->w, s, STOP_ZERO_RA);
		st->w.pc = regs[0];
		st->w.sp = regs[1];
		st->w.bp = regs[2];
		st->w.bp_known = 1;
		st->w.exact_pc = 1; /* the interrupted instruction itself */
		return 0;
	}
	case RULE_STOP:
		return unwind_stop(&st->w, s, aux);
	default:
		return unwind_stop(&st->w, s, STOP_MALFORMED);
	}
	if (cfa <= st->w.sp)
		return unwind_stop(&st->w, s, STOP_NO_PROGRESS);
	/* [0]: the saved RBP when it is next to the return address (push %rbp first: CFA-16), [1]: RA */
	__u64 pair[2] = {};
	int adjacent = aux == RBP_SAVED && rbp_off == -16;
	if (bpf_probe_read_user(adjacent ? &pair[0] : &pair[1], adjacent ? 16 : 8, (void *)(cfa - (adjacent ? 16 : 8))))
		return unwind_stop(&st->w, s, STOP_READ_FAILED);
	if (pair[1] == 0)
		return unwind_stop(&st->w, s, STOP_ZERO_RA);
	__u64 ra = pair[1];
	if (aux == RBP_SAVED) {
		if (!adjacent && bpf_probe_read_user(&pair[0], 8, (void *)(cfa + (__s64)rbp_off)))
			return unwind_stop(&st->w, s, STOP_READ_FAILED);
		st->w.bp = pair[0];
		st->w.bp_known = 1;
	} else if (aux != RBP_UNCHANGED) {
		st->w.bp_known = 0;
	}
	st->w.sp = cfa;
	st->w.pc = ra;
	st->w.exact_pc = 0;
	return 0;
}

/* One frame of a process with unwind state: record pc, then find the caller by the mapping's table or by
 * frame pointers. */
static long unwind_step(__u32 i, void *unused)
{
	__u32 zero = 0;
	struct sample *s = bpf_map_lookup_elem(&scratch, &zero);
	struct unwind_state *st = bpf_map_lookup_elem(&unwind_scratch, &zero);
	if (!s || !st)
		return 1;
	if (!push_frame(s, &st->w, st->w.pc))
		return 1;
	__u64 lookup_pc = st->w.exact_pc ? st->w.pc : st->w.pc - 1; /* a return address: look inside the call */
	/* Unsigned: also a miss while the cache is empty. */
	if (lookup_pc - st->m_start >= st->m_end - st->m_start && !load_mapping(st, lookup_pc, 0))
		return fp_step(i, &st->w, s); /* in no mapping Java knows: frame pointers */
	if (st->m_kind == MAPPING_FP)
		return fp_step(i, &st->w, s); /* JIT or anonymous code, Go: frame pointers */
	if (st->m_kind == MAPPING_STOP)
		return unwind_stop(&st->w, s, st->m_table_id);
	return table_step(st, s, lookup_pc);
}

/*
 * One frame of a frame-pointer-only walk (tables off, or a process Java has not registered): the state
 * stays on the caller's stack and nothing but the sample is looked up, since this is most samples' path
 * when tables are off and it costs per frame.
 */
static long fp_only_step(__u32 i, struct walk *w)
{
	__u32 zero = 0;
	struct sample *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s || !push_frame(s, w, w->pc))
		return 1;
	return fp_step(i, w, s);
}

/*
 * One sample. Compiled twice with tables a constant: sample_cpu walks with unwind tables, sample_cpu_fp with
 * frame pointers only. Java loads one of them (--unwind-tables), so the frame-pointer-only agent neither
 * pays the verifier for the table walk at start nor looks anything up per sample.
 */
static __always_inline int sample(void *ctx, const int tables, const int off_cpu, __u64 now, __u16 state)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 host_tgid = pid_tgid >> 32;
	__u32 host_tid = (__u32)pid_tgid;
	__u32 zero = 0;

	if (host_tid == 0) { /* swapper: the CPU is idle */
		count(STAT_IDLE);
		return 0;
	}
	int outside = to_java_pids(&pid_tgid);
	__u32 tgid = pid_tgid >> 32;
	__u32 tid = (__u32)pid_tgid;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg)
		return 0;
	/* Java's pids: a task outside its namespace is in no filter it can write. */
	if (cfg->filter_pids && (outside || !bpf_map_lookup_elem(&pid_filter, &tgid))) {
		if (!off_cpu)
			count(STAT_FILTERED);
		return 0;
	}
	if (!off_cpu)
		count(STAT_SAMPLES);
	if (outside)
		count(STAT_PID_OUTSIDE);

	struct sample *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	struct task_struct *task = bpf_get_current_task_btf();

	s->pid = tgid;
	s->tid = tid;
	s->cpu = bpf_get_smp_processor_id();
	s->ktime_ns = off_cpu ? now : bpf_ktime_get_ns();
	s->flags = off_cpu ? SAMPLE_F_OFF_CPU : 0;
	s->mappings = 0;
	s->off_cpu_state = state;
	s->off_cpu_ns = 0;
	bpf_get_current_comm(s->thread_comm, sizeof(s->thread_comm));
	bpf_core_read_str(s->comm, sizeof(s->comm), &task->group_leader->comm);
	s->start_boottime = BPF_CORE_READ(task, group_leader, start_boottime);
	s->host_pid = host_tgid;
	s->host_tid = host_tid;
	if (outside)
		s->flags |= SAMPLE_F_PID_OUTSIDE;

	/* Off-CPU: in schedule, so in the kernel; the user registers are those saved at kernel entry. */
	int user_mode = off_cpu ? 0 : (((struct perf_event_ctx *)ctx)->regs.cs & 3) == 3;
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

	struct walk w = {};
	w.base = nk;
	w.bp_known = 1;
	w.exact_pc = 1;
	/* No user stack for a kernel thread, nor for a task outside Java's namespace: its pid names nothing
	 * Java may read, and the procs map is keyed by Java's pids. */
	/* Nor for a process whose mm is gone (exiting: exit_mmap tears its memory down): it has no user stack any more. */
	int no_user = (task->flags & PF_KTHREAD) || outside || !BPF_CORE_READ(task, mm);
#if LOUPE_VMA_ITER
	/* Nor in the kernel amid an exec, past its point of no return: the registers saved at entry are the old
	 * program's, the memory is the new one's (the followed entry is still of the old mm until sched_process_exec). */
	if (!no_user && !user_mode && tables) {
		struct proc_maps *old = bpf_map_lookup_elem(&proc_maps, &host_tgid);
		if (old && old->mm != (__u64)BPF_CORE_READ(task, mm))
			no_user = 1;
	}
#endif
	struct proc_unwind *pu = 0;
	if (tables && !no_user) {
		pu = bpf_map_lookup_elem(&procs, &tgid);
		if (pu && pu->start_ticks != s->start_boottime / NSEC_PER_TICK)
			pu = 0;
	}
	__u64 r13 = 0; /* the leaf's, for HotSpot's interpreter (its bcp) */
	if (!no_user) {
		if (user_mode) {
			struct perf_event_ctx *pctx = ctx;
			w.pc = pctx->regs.ip;
			w.sp = pctx->regs.sp;
			w.bp = pctx->regs.bp;
			r13 = pctx->regs.r13;
		} else {
			/* In the kernel: the user registers saved at kernel entry. */
			struct pt_regs *uregs = (struct pt_regs *)bpf_task_pt_regs(task);
			w.pc = BPF_CORE_READ(uregs, ip);
			w.sp = BPF_CORE_READ(uregs, sp);
			w.bp = BPF_CORE_READ(uregs, bp);
			r13 = BPF_CORE_READ(uregs, r13);
		}
	}
	__u32 nm = 0; /* mappings the walk found itself, carried by the record */
	struct unwind_state *st = 0;
	if (tables && w.pc && !pu) {
#if LOUPE_VMA_ITER
		/* Not followed (it started before the agent): registration, as before; followed but long-lived: its walk is
		 * cheaper with a registered slice. */
		if (!bpf_map_lookup_elem(&proc_maps, &host_tgid) ||
		    bpf_ktime_get_boot_ns() - s->start_boottime > REGISTER_AFTER_NS)
			w.flags |= SAMPLE_F_NEEDS_PROCESS;
#else
		w.flags |= SAMPLE_F_NEEDS_PROCESS | SAMPLE_F_FP_FALLBACK; /* no memory map reader: registration, as before */
#endif
	}
	if (tables && w.pc) {
		st = bpf_map_lookup_elem(&unwind_scratch, &zero);
		if (!st)
			return 0;
		__builtin_memset(st, 0, __builtin_offsetof(struct unwind_state, found));
		st->w = w;
		st->leaf_r13 = r13;
		st->host_tgid = host_tgid;
		st->mm = (__u64)BPF_CORE_READ(task, mm);
		st->young = bpf_ktime_get_boot_ns() - s->start_boottime < RUNTIME_REGISTER_AFTER_NS;
		if (pu) {
			st->proc_first = pu->first;
			st->proc_count = pu->count;
			st->registered = 1;
		}
		bpf_loop(MAX_USER_FRAMES + 1, unwind_step, 0, 0);
		w = st->w;
		nm = st->n_found;
		add(STAT_TABLE_FRAMES, st->table_frames);
		add(STAT_FP_NO_FDE_FRAMES, st->no_fde_frames);
		add(STAT_VMA_LOOKUPS, st->vma_lookups);
		add(STAT_VMA_LOOKUP_FAILURES, st->vma_failures);
		add(STAT_FILE_TABLE_MISSES, st->file_misses);
		if (w.flags & SAMPLE_F_FP_FALLBACK)
			count(STAT_FP_FALLBACK);
	} else if (w.pc) {
		bpf_loop(MAX_USER_FRAMES + 1, fp_only_step, &w, 0);
	}
	if (w.flags & SAMPLE_F_USER_TRUNCATED)
		count(STAT_USER_TRUNCATED);
	if (w.flags & SAMPLE_F_USER_READ_ERROR)
		count(STAT_USER_READ_ERRORS);
	if (w.flags & SAMPLE_F_UNWIND_STOPPED)
		count(STAT_UNWIND_STOPPED);
	add(STAT_FP_FRAMES, w.fp_frames);
	s->flags |= w.flags;
	__u32 nu = w.n;
	if (nu > MAX_USER_FRAMES)
		nu = MAX_USER_FRAMES;
	s->user_frames = nu;

	__u32 used = nk + nu;
	barrier_var(used); /* else clang folds the bound below into the pointer arithmetic and the verifier loses it */
	if (nm > MAX_SAMPLE_MAPPINGS || used > MAX_FRAMES || !st)
		nm = 0;
	if (nm && st && used <= MAX_FRAMES) {
		struct sampled_mapping *dst = (struct sampled_mapping *)&s->frames[used];
#pragma clang loop unroll(disable)
		for (__u32 i = 0; i < MAX_SAMPLE_MAPPINGS; i++) {
			if (i >= nm)
				break;
			struct found_mapping *fm = &st->found[i];
			dst[i].start = fm->start;
			dst[i].end = fm->end;
			dst[i].offset = fm->offset;
			dst[i].dev = fm->dev;
			dst[i].ino = fm->ino;
			dst[i].kind = fm->sampled_kind;
			dst[i].reserved = 0;
		}
	}
	s->mappings = nm;
	__u64 size = __builtin_offsetof(struct sample, frames) + (__u64)used * sizeof(__u64) +
		     (__u64)nm * sizeof(struct sampled_mapping);
	if (size > sizeof(*s))
		size = sizeof(*s);
	__u64 wake = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= cfg->wakeup_bytes
		? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	/* Code without its table or registration yet: wake user space now (at most every 10 ms), since this sample
	 * is what gets them loaded; batching it would delay that by up to the poll timeout. So does a runtime's frame of
	 * a process not registered (most likely young and short-lived): its names are read from the process's memory,
	 * which is gone once it exits. */
	if (tables && wake == BPF_RB_NO_WAKEUP && ((s->flags & (SAMPLE_F_FP_FALLBACK | SAMPLE_F_NEEDS_PROCESS)) ||
						   (st && st->tagged && !st->registered))) {
		__u64 now = bpf_ktime_get_ns();
		if (now - last_fallback_wakeup_ns >= 10 * 1000 * 1000) {
			last_fallback_wakeup_ns = now;
			wake = BPF_RB_FORCE_WAKEUP;
		}
	}
	if (bpf_ringbuf_output(&samples, s, size, wake)) {
		count(off_cpu ? STAT_OFF_CPU_DROPS : STAT_RINGBUF_DROPS);
		return 0;
	}
	return 1;
}

SEC("perf_event")
int sample_cpu(struct perf_event_ctx *ctx)
{
	sample(ctx, 1, 0, 0, 0);
	return 0;
}

SEC("perf_event")
int sample_cpu_fp(struct perf_event_ctx *ctx)
{
	sample(ctx, 0, 0, 0, 0);
	return 0;
}

/*
 * Off-CPU. Threads recorded at their switch-out whose switch-in is awaited, by the kernel's tid: the switch-out's
 * time. LRU: an entry whose thread never runs again (it was killed while waiting) ages out.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} off_cpu_since SEC(".maps");

#define LOUPE_TASK_INTERRUPTIBLE 0x1
#define LOUPE_TASK_UNINTERRUPTIBLE 0x2
#define LOUPE_TASK_DEAD 0x80
#define LOUPE_EXIT_DEAD 0x10
#define LOUPE_EXIT_ZOMBIE 0x20

/*
 * sched_switch(preempt, prev, next, prev_state) (prev_state an argument since Linux 5.18), in the switching CPU's
 * context with interrupts off: current is still prev, so prev's stack is walked here by the same walker as a CPU
 * sample's (its user registers saved at kernel entry, bpf_get_stack from the tracepoint: schedule <- do_nanosleep ...).
 * No hook runs in the context of the task coming back on every kernel (finish_task_switch is static, often
 * finish_task_switch.isra.0, and kprobes may be missing): so the switch-out writes the stack and remembers the time,
 * and next's switch-in writes a header-only record with the wait's length that Java joins to it. A probability gate
 * (config.off_cpu_threshold) bounds the cost; the switch-in side costs one hash lookup per switch.
 */
SEC("raw_tracepoint/sched_switch")
int off_cpu_switch(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *prev = (struct task_struct *)ctx->args[1];
	struct task_struct *next = (struct task_struct *)ctx->args[2];
	__u32 prev_state = (__u32)ctx->args[3];
	int preempt = ctx->args[0] & 1;
	__u64 now = bpf_ktime_get_ns();
	__u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg)
		return 0;

	__u32 next_tid = BPF_CORE_READ(next, pid);
	__u64 *since = next_tid ? bpf_map_lookup_elem(&off_cpu_since, &next_tid) : 0;
	if (since) {
		__u64 start = *since;
		bpf_map_delete_elem(&off_cpu_since, &next_tid);
		struct sample *e = bpf_ringbuf_reserve(&samples, __builtin_offsetof(struct sample, frames), 0);
		if (!e) {
			count(STAT_OFF_CPU_END_DROPS);
		} else {
			__builtin_memset(e, 0, __builtin_offsetof(struct sample, frames));
			e->host_pid = BPF_CORE_READ(next, tgid);
			e->host_tid = next_tid;
			e->cpu = bpf_get_smp_processor_id();
			e->ktime_ns = start;
			e->off_cpu_ns = now - start;
			e->flags = SAMPLE_F_OFF_CPU_END;
			__u64 wake = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= cfg->wakeup_bytes
				? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
			bpf_ringbuf_submit(e, wake);
		}
	}

	/* prev is current: the idle task (pid 0) and kernel threads have no user stack; an exiting thread no return. */
	__u32 prev_tid = BPF_CORE_READ(prev, pid);
	if (prev_tid == 0 || (BPF_CORE_READ(prev, flags) & PF_KTHREAD) ||
	    (prev_state & (LOUPE_TASK_DEAD | LOUPE_EXIT_DEAD | LOUPE_EXIT_ZOMBIE)))
		return 0;
	count(STAT_OFF_CPU_SWITCHES);
	if ((__u64)bpf_get_prandom_u32() >= cfg->off_cpu_threshold)
		return 0;
	if (cfg->skip_tgid && (__u32)BPF_CORE_READ(prev, tgid) == cfg->skip_tgid)
		return 0;
	__u16 state = preempt || prev_state == 0 ? OFF_CPU_RUNNABLE
		: (prev_state & LOUPE_TASK_UNINTERRUPTIBLE) ? OFF_CPU_BLOCKED
		: (prev_state & LOUPE_TASK_INTERRUPTIBLE) ? OFF_CPU_SLEEPING : OFF_CPU_STOPPED;
	if (!sample(ctx, 1, 1, now, state))
		return 0; /* filtered out, or its record lost (counted) */
	count(STAT_OFF_CPU_RECORDED);
	bpf_map_update_elem(&off_cpu_since, &prev_tid, &now, BPF_ANY);
	return 0;
}

/*
 * A process exits: sched_process_exit fires for every thread in do_exit, after the thread left signal->live; the
 * thread that finds it at 0 is the group's last (two last threads racing may both find 0: Java takes an exit twice
 * as once). The process's unwind entry leaves the kernel at once, and a header-only record (SAMPLE_F_PROCESS_EXIT)
 * follows its samples in the ring buffer, so Java releases what it holds for that exact process (pid and start
 * time) as soon as it has read them. It never wakes user space by itself: the next poll (100 ms) reads it.
 * Loaded with either sampling program; a record lost to a full ring buffer is counted, and Java's periodic /proc
 * scan finds that exit instead. A raw tracepoint (attached by name, no tracefs needed); the exiting task is the
 * current one, so the tracepoint's arguments are not read.
 */
SEC("raw_tracepoint/sched_process_exit")
int process_exit(void *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	if (BPF_CORE_READ(task, signal, live.counter) != 0 || (task->flags & PF_KTHREAD))
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 host_tgid = pid_tgid >> 32;
	__u32 host_tid = (__u32)pid_tgid;
	if (to_java_pids(&pid_tgid))
		return 0; /* outside Java's namespace: it holds nothing for it */
	__u32 tgid = pid_tgid >> 32;
	__u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg)
		return 0;
	if (cfg->filter_pids && !bpf_map_lookup_elem(&pid_filter, &tgid))
		return 0;
	/* Its entry, if any, is this process's or a stale one of an earlier process with the pid: neither is walked again. */
	bpf_map_delete_elem(&procs, &tgid);
	bpf_map_delete_elem(&proc_maps, &host_tgid);

	__u64 wake = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= cfg->wakeup_bytes
		? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	struct sample *s = bpf_ringbuf_reserve(&samples, __builtin_offsetof(struct sample, frames), 0);
	if (!s) {
		count(STAT_EXIT_DROPS);
		return 0;
	}
	s->pid = tgid;
	s->tid = (__u32)pid_tgid;
	s->cpu = bpf_get_smp_processor_id();
	s->kernel_frames = 0;
	s->user_frames = 0;
	bpf_get_current_comm(s->thread_comm, sizeof(s->thread_comm));
	bpf_core_read_str(s->comm, sizeof(s->comm), &task->group_leader->comm);
	s->ktime_ns = bpf_ktime_get_ns();
	s->flags = SAMPLE_F_PROCESS_EXIT;
	s->mappings = 0;
	s->off_cpu_state = 0;
	s->off_cpu_ns = 0;
	s->start_boottime = BPF_CORE_READ(task, group_leader, start_boottime);
	s->host_pid = host_tgid;
	s->host_tid = host_tid;
	bpf_ringbuf_submit(s, wake);
	count(STAT_PROCESS_EXITS);
	return 0;
}

/* Whether the current process is one Java wants (the --pid filter), by Java's pid. */
static __always_inline __attribute__((unused)) int followed(void)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (to_java_pids(&pid_tgid))
		return 0;
	__u32 tgid = pid_tgid >> 32, zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	return cfg && (!cfg->filter_pids || bpf_map_lookup_elem(&pid_filter, &tgid));
}

/*
 * Reads every executable mapping of the current process with the VMA iterator (process context: interrupts on) and
 * makes them its followed mappings, replacing what its tgid had.
 */
static __always_inline void follow_mappings(void)
{
#if LOUPE_VMA_ITER
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, zero = 0;
	if (!followed())
		return;
	struct proc_maps *pm = bpf_map_lookup_elem(&proc_maps_scratch, &zero);
	if (!pm)
		return;
	struct task_struct *task = bpf_get_current_task_btf();
	pm->mm = (__u64)BPF_CORE_READ(task, mm);
	pm->n = 0;
	pm->overflow = 0;
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;
	if (bpf_iter_task_vma_new(&it, task, 0) == 0) {
		while ((vma = bpf_iter_task_vma_next(&it))) {
			/* The count lives in the map value, not in a register: the verifier knows nothing of it but the bound
			 * below, so the iterations' states converge instead of being explored one count each. */
			__u32 n = pm->n;
			if (n >= MAX_PMAP) {
				pm->overflow = 1;
				break;
			}
			struct pmap_entry e = {};
			if (read_vma(vma, &e)) {
				pm->e[n] = e;
				pm->n = n + 1;
			}
		}
	}
	bpf_iter_task_vma_destroy(&it);
	bpf_map_update_elem(&proc_maps, &tgid, pm, BPF_ANY);
#endif
}

/* A process exec'd: its executable mappings so far (the binary, ld.so, the vdso; all of a static binary's). */
SEC("raw_tracepoint/sched_process_exec")
int process_exec(void *ctx)
{
	follow_mappings();
	return 0;
}

/*
 * Glibc has just mapped libraries (uprobes, PerfEventSampler.LOADER_HOOKS: ld.so sets up the main thread's TLS once a
 * program's libraries are mapped, before main; libc's dlsym, which follows a dlopen): the process's executable
 * mappings now. Not _dl_debug_state, where gdb puts its own breakpoint.
 */
SEC("uprobe")
int loader_changed(struct pt_regs *ctx)
{
	follow_mappings();
	return 0;
}

/* A new process (not a thread) starts with its parent's mappings: it gets a copy of the parent's followed mappings. */
SEC("raw_tracepoint/sched_process_fork")
int process_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx->args[0];
	struct task_struct *child = (struct task_struct *)ctx->args[1];
	__u32 ppid = BPF_CORE_READ(parent, tgid);
	__u32 cpid = BPF_CORE_READ(child, pid);
	if (cpid != (__u32)BPF_CORE_READ(child, tgid))
		return 0; /* a thread: same process, same entry */
	struct proc_maps *pm = bpf_map_lookup_elem(&proc_maps, &ppid);
	if (!pm) {
		/* A parent the kernel does not follow yet (it started before the agent: a shell loop, a CI runner): it is
		 * followed from its first fork (this runs in its context), so its children are from their first sample,
		 * not asking for a registration each until they exec. */
		follow_mappings();
		pm = bpf_map_lookup_elem(&proc_maps, &ppid);
		if (!pm)
			return 0;
	}
	__u32 zero = 0;
	struct proc_maps *copy = bpf_map_lookup_elem(&proc_maps_scratch, &zero);
	if (!copy || bpf_probe_read_kernel(copy, sizeof(*copy), pm))
		return 0;
	copy->mm = (__u64)BPF_CORE_READ(child, mm);
	bpf_map_update_elem(&proc_maps, &cpid, copy, BPF_ANY);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
