/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * CPython's runtime step for the walker (RULE_PYTHON_EVAL): at each native frame of _PyEval_EvalFrameDefault, the
 * interpreter frames that call ran, innermost first, each as its code object and instruction index tagged
 * FRAME_TYPE_PYTHON, in place of the native frame; then the native frame's own CFA step (the rule's aux byte keeps
 * its kind). The version's layout (dev.loupe.unwinder.python.PythonLayout) is the first PYTHON_DATA_WORDS rules of
 * the interpreter binary's table (one per binary, in file addresses: _PyRuntime's address in it is the file's, and
 * the mapping's load bias makes it the process's). Included by profiler.bpf.c after the walk's state
 * and helpers, and dispatched from its runtime_step; the spec is dev.loupe.unwinder.python.PythonFrameStep.
 */
#ifndef PYTHON_BPF_H
#define PYTHON_BPF_H

#include "loupe_abi.h"

/* Only the field read: the thread's FS base is its pthread_t, which CPython keeps as the thread state's thread_id. */
struct thread_struct___loupe_py {
	unsigned long fsbase;
} __attribute__((preserve_access_index));
struct task_struct___loupe_py {
	struct thread_struct___loupe_py thread;
} __attribute__((preserve_access_index));

/* Where the walk of one sample is in the thread's interpreter frames; reset when a new sample comes (ktime). */
struct python_walk {
	__u64 sample_ktime;
	__u64 cursor;   /* the next interpreter frame to report: the innermost not yet reported */
	__u32 started;  /* 1: cursor was found for this sample */
	__u32 pad;
	/* One eval call's walk (python_frame), set by python_eval_step: the layout's fields and where the walk is. */
	__u64 f;           /* the next frame to read */
	__u32 emitted;     /* frames this call reported */
	__u32 failed;      /* an error frame was reported: the sample's later calls report nothing */
	__u32 variant;
	__u32 cstack_owner;
	__u16 previous_off, code_off, instr_off, end_off, code_start, pad2[3];
	__u64 block_start; /* the user address of block[0] */
	__u64 block_len;   /* bytes of block read for this sample (0: none) */
	/* The last memory read: a frame's first PYTHON_FRAME_BYTES (every field the walk needs lies there) and, for 3.11+,
	 * the bytes below it, where its callers' frames lie in the thread's data stack chunk (pushed before it); room past
	 * it for an 8-byte field at the last offset the masks leave. */
	__u8 block[PYTHON_BLOCK_BYTES + PYTHON_FRAME_BYTES + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct python_walk);
} python_scratch SEC(".maps");

static __always_inline __u64 python_field(__u64 word, int k)
{
	return (word >> (8 + 16 * k)) & 0xffff;
}

/* Replaces the frame the walk pushed last (i == 0) or pushes another (the frames the same native call ran). */
static __always_inline void python_emit(struct unwind_state *st, struct sample *s, int i, __u64 value)
{
	__u64 frame = (value & ((1ULL << FRAME_TYPE_SHIFT) - 1)) | FRAME_TAG(FRAME_TYPE_PYTHON);
	st->tagged = 1;
	if (i == 0) {
		__u32 idx = st->w.base + st->w.n - 1;
		if (st->w.n > 0 && idx < MAX_FRAMES)
			s->frames[idx] = frame;
		return;
	}
	push_frame(s, &st->w, frame);
}

/* The little-endian field of `size` bytes at `off` of the frame at `at` in the block (zero past PYTHON_FRAME_BYTES). */
static __always_inline __u64 python_frame_field(struct python_walk *pw, __u64 at, __u64 off, int size)
{
	__u64 v = 0;
	if (off > PYTHON_FRAME_BYTES - size || at > PYTHON_BLOCK_BYTES - PYTHON_FRAME_BYTES)
		return 0;
	asm volatile("" : "+r"(off)); /* bound the registers the access uses, not copies the compiler made earlier */
	asm volatile("" : "+r"(at));
	off &= PYTHON_FRAME_BYTES - 1;
	at &= PYTHON_BLOCK_BYTES - 1;
	if (size == 8)
		__builtin_memcpy(&v, &pw->block[at + off], 8);
	else
		v = pw->block[at + off];
	return v;
}

/*
 * Makes the frame at f readable in pw->block and returns its offset there, or -1 if its head cannot be read. A frame
 * the last read holds costs nothing; otherwise one read: for 3.11+, the PYTHON_BLOCK_BYTES that end with f's head (its
 * callers' frames, pushed before it in the data stack chunk, lie below it), not starting below f's page; if that
 * fails (or for 3.9/3.10, whose frames are separate heap objects), the head alone.
 */
static __always_inline long python_load_frame(struct python_walk *pw, __u64 f, __u32 variant)
{
	if (pw->block_len >= PYTHON_FRAME_BYTES && f >= pw->block_start &&
	    f - pw->block_start <= pw->block_len - PYTHON_FRAME_BYTES)
		return f - pw->block_start;
	__u64 start = f;
	if (variant != PYTHON_V39 && f >= PYTHON_BLOCK_BYTES) {
		__u64 page = f & ~(__u64)(PYTHON_PAGE_BYTES - 1);
		start = f + PYTHON_FRAME_BYTES - PYTHON_BLOCK_BYTES;
		if (start < page)
			start = page;
	}
	__u64 len = f + PYTHON_FRAME_BYTES - start;
	if (len < PYTHON_FRAME_BYTES || len > PYTHON_BLOCK_BYTES)
		len = PYTHON_FRAME_BYTES, start = f; /* not reached; bounds the read for the verifier */
	asm volatile("" : "+r"(len));
	if (len > PYTHON_BLOCK_BYTES)
		len = PYTHON_BLOCK_BYTES;
	if (bpf_probe_read_user(pw->block, len, (void *)start)) {
		if (start == f || bpf_probe_read_user(pw->block, PYTHON_FRAME_BYTES, (void *)f)) {
			pw->block_len = 0;
			return -1;
		}
		start = f;
		len = PYTHON_FRAME_BYTES;
	}
	pw->block_start = start;
	pw->block_len = len;
	return f - start;
}

static __always_inline __u64 python_error_value(__u32 err)
{
	return err;
}

/* The innermost interpreter frame of the sampled thread: its thread state is the one whose thread_id is its FS base.
 * bias: the binary's load bias in this process. */
static __always_inline __u64 python_current_frame(__u64 w[PYTHON_DATA_WORDS], __u64 bias, __u32 *err)
{
	__u64 fsbase = 0;
	struct task_struct___loupe_py *task = (void *)bpf_get_current_task_btf();
	if (bpf_core_read(&fsbase, sizeof(fsbase), &task->thread.fsbase) || fsbase == 0) {
		*err = PYTHON_ERR_NO_THREAD;
		return 0;
	}
	__u64 heads = ((w[0] >> 8) & ((1ULL << 48) - 1)) + bias;
	__u64 interp = 0, ts = 0;
	if (bpf_probe_read_user(&interp, 8, (void *)heads) || interp == 0 ||
	    bpf_probe_read_user(&ts, 8, (void *)(interp + python_field(w[1], 0)))) {
		*err = PYTHON_ERR_READ;
		return 0;
	}
	__u64 next_off = python_field(w[1], 1), id_off = python_field(w[1], 2);
	int found = 0;
#pragma clang loop unroll(disable)
	for (int k = 0; k < PYTHON_MAX_THREADS && ts != 0; k++) {
		__u64 id = 0;
		if (bpf_probe_read_user(&id, 8, (void *)(ts + id_off))) {
			*err = PYTHON_ERR_READ;
			return 0;
		}
		if (id == fsbase) {
			found = 1;
			break;
		}
		if (bpf_probe_read_user(&ts, 8, (void *)(ts + next_off))) {
			*err = PYTHON_ERR_READ;
			return 0;
		}
	}
	if (!found) {
		*err = PYTHON_ERR_NO_THREAD;
		return 0;
	}
	__u64 holder_off = python_field(w[2], 0), current_off = python_field(w[2], 1);
	__u64 holder = ts;
	if (holder_off != PYTHON_NO_HOLDER && bpf_probe_read_user(&holder, 8, (void *)(ts + holder_off))) {
		*err = PYTHON_ERR_READ;
		return 0;
	}
	__u64 frame = 0;
	if (holder == 0 || bpf_probe_read_user(&frame, 8, (void *)(holder + current_off))) {
		*err = PYTHON_ERR_READ;
		return 0;
	}
	return frame;
}

/*
 * One interpreter frame of the eval call python_eval_step reports (a bpf_loop step; the walk's state in python_scratch):
 * reports pw->f and moves to its caller. Returns 1 when the call's frames end (its entry frame, 3.9/3.10's one frame,
 * 3.11's is_entry), the chain ends, or an error frame was reported (pw->failed).
 */
static long python_frame(__u32 k, void *unused)
{
	__u32 zero = 0;
	struct sample *s = bpf_map_lookup_elem(&scratch, &zero);
	struct unwind_state *st = bpf_map_lookup_elem(&unwind_scratch, &zero);
	struct python_walk *pw = bpf_map_lookup_elem(&python_scratch, &zero);
	if (!s || !st || !pw)
		return 1;
	__u64 f = pw->f;
	__u32 variant = pw->variant;
	if (f == 0)
		return 1;
	/* The frame's head, from the block the last read brought in or from one new read; the fields' offsets were
	 * checked to lie in the head when the table was built. */
	long at = python_load_frame(pw, f, variant);
	if (at < 0) {
		python_emit(st, s, pw->emitted, python_error_value(PYTHON_ERR_READ));
		pw->failed = 1;
		return 1;
	}
	__u64 code = python_frame_field(pw, at, pw->code_off, 8);
	__u64 instr = python_frame_field(pw, at, pw->instr_off, 8);
	__u64 previous = python_frame_field(pw, at, pw->previous_off, 8);
	__u8 end = variant == PYTHON_V39 ? 0 : python_frame_field(pw, at, pw->end_off, 1);
	if (variant >= PYTHON_V312 && end >= pw->cstack_owner) {
		pw->f = previous; /* the call's entry frame (3.14: or another frame of no code): its frames are reported */
		return 1;
	}
	if (variant == PYTHON_V313)
		code &= ~3ULL; /* 3.14's f_executable is a stack reference: its low two bits are tags */
	__u64 index = PYTHON_INDEX_UNKNOWN;
	if (variant == PYTHON_V39) {
		__s32 lasti = (__s32)instr;
		if (lasti >= 0 && lasti < PYTHON_INDEX_UNKNOWN)
			index = lasti;
	} else {
		__u64 first = code + pw->code_start;
		if (instr < first)
			index = 0; /* 3.11's prev_instr is one before the first instruction until it runs */
		else if ((instr - first) / 2 < PYTHON_INDEX_UNKNOWN)
			index = (instr - first) / 2;
	}
	if (code == 0 || (code & ((1 << PYTHON_CODE_SHIFT) - 1)) || code >= (1ULL << 47)) {
		python_emit(st, s, pw->emitted, python_error_value(PYTHON_ERR_BAD_CODE));
		pw->failed = 1;
		return 1;
	}
	python_emit(st, s, pw->emitted, (code >> PYTHON_CODE_SHIFT) << PYTHON_INDEX_BITS | index);
	pw->emitted++;
	pw->f = previous;
	return variant == PYTHON_V39 || (variant == PYTHON_V311 && end);
}

/*
 * A native frame of _PyEval_EvalFrameDefault (RULE_PYTHON_EVAL): reports the interpreter frames its call ran and
 * returns RUNTIME_STEP_NATIVE, so that the caller steps the native frame by the kind in the rule's aux byte.
 * 3.9/3.10: one frame per call. 3.11: frames up to and including the one marked is_entry. 3.12+: frames up to the
 * entry frame the call keeps on the C stack (owned by the C stack), which is skipped.
 */
static __always_inline long python_eval_step(struct unwind_state *st, struct sample *s)
{
	__u64 w[PYTHON_DATA_WORDS] = {};
#pragma clang loop unroll(full)
	for (int k = 0; k < PYTHON_DATA_WORDS; k++) {
		__u32 ridx = st->t_rule_start + k;
		__u64 *r = bpf_map_lookup_elem(&unwind_rules, &ridx);
		if (!r || (*r & 0xff) != RULE_PYTHON_DATA) {
			python_emit(st, s, 0, python_error_value(PYTHON_ERR_LAYOUT));
			return RUNTIME_STEP_NATIVE;
		}
		w[k] = *r;
	}
	__u32 zero = 0;
	struct python_walk *pw = bpf_map_lookup_elem(&python_scratch, &zero);
	if (!pw)
		return RUNTIME_STEP_NATIVE;
	if (pw->sample_ktime != s->ktime_ns || !pw->started) {
		__u32 err = 0;
		pw->sample_ktime = s->ktime_ns;
		pw->started = 1;
		pw->block_len = 0;
		pw->cursor = python_current_frame(w, st->m_bias, &err);
		if (err) {
			python_emit(st, s, 0, python_error_value(err));
			return RUNTIME_STEP_NATIVE;
		}
	}
	pw->variant = w[0] >> 56;
	pw->previous_off = python_field(w[2], 2);
	pw->code_off = python_field(w[3], 0);
	pw->instr_off = python_field(w[3], 1);
	pw->end_off = python_field(w[3], 2);
	pw->code_start = python_field(w[4], 0);
	pw->cstack_owner = w[1] >> 56;
	pw->f = pw->cursor;
	pw->emitted = 0;
	pw->failed = 0;
	/* A loop of its own, so that the verifier checks one frame's step, not each of the 64 in turn. */
	bpf_loop(PYTHON_MAX_FRAMES_PER_EVAL, python_frame, 0, 0);
	__u32 variant = pw->variant;
	pw->cursor = pw->failed ? 0 : pw->f;
	if (!pw->failed && pw->emitted == 0 && variant != PYTHON_V312 && variant != PYTHON_V313)
		python_emit(st, s, 0, python_error_value(PYTHON_ERR_NO_FRAMES));
	return RUNTIME_STEP_NATIVE;
}

#endif
