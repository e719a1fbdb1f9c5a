/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * V8's runtime step for the walker (RULE_V8_FRAME): a pc in V8's code (the embedded builtins of node's binary, by its
 * file table; the JIT code, by the process's code table). Every such frame keeps a frame pointer. A JavaScript
 * frame (its marker slot holds a context, a heap object) is reported as its function's SharedFunctionInfo and, in
 * the builtins (the interpreter's code), its bytecode offset, tagged FRAME_TYPE_V8, in place of its pc; any other
 * frame (a Smi type marker: entry, exit, stub frames) stays the native pc. Then the frame-pointer step. The layout
 * word (RULE_V8_DATA) is the table's rule 0. Included by profiler.bpf.c after the walk's state and helpers, and
 * dispatched from its runtime_step; the spec is dev.loupe.unwinder.v8.V8FrameStep.
 */
#ifndef V8_BPF_H
#define V8_BPF_H

#include "loupe_abi.h"

/* The frame value of a JavaScript frame, or an error frame's. */
static __always_inline __u64 v8_value(__u64 object, __u64 offset)
{
	return (object >> V8_OBJECT_SHIFT) << V8_OFFSET_BITS | (offset & V8_OFFSET_UNKNOWN);
}

/* The slot `dist` bytes below the frame pointer, of the V8_SLOTS_BYTES read (slots[0] is the lowest). */
static __always_inline __u64 v8_slot(__u64 slots[8], __u64 dist)
{
	return slots[((V8_SLOTS_BYTES - dist) >> 3) & 7];
}

static __always_inline long v8_frame_step(struct unwind_state *st, struct sample *s, __u32 aux)
{
	__u64 bp = st->w.bp;
	if (!st->w.bp_known || bp == 0)
		return unwind_stop(&st->w, s, STOP_RBP_UNKNOWN);
	if (bp < st->w.sp || bp - st->w.sp >= V8_MAX_FRAME_BYTES)
		return unwind_stop(&st->w, s, STOP_NO_PROGRESS);
	/* [bp - V8_SLOTS_BYTES, bp + 16): the slots, then the caller's rbp and the return address */
	__u64 slots[8] = {};
	if (bpf_probe_read_user(slots, sizeof(slots), (void *)(bp - V8_SLOTS_BYTES)))
		return unwind_stop(&st->w, s, STOP_READ_FAILED);
	__u32 ridx = st->t_rule_start;
	__u64 *word = bpf_map_lookup_elem(&unwind_rules, &ridx);
	__u64 marker_dist = 0, function_dist = 0, offset_dist = 0, shared_off = 0;
	int layout = word && (*word & 0xff) == RULE_V8_DATA;
	if (layout) {
		marker_dist = (*word >> 8) & 0xff;
		function_dist = (*word >> 16) & 0xff;
		offset_dist = (*word >> 24) & 0xff;
		shared_off = (*word >> 32) & 0xffff;
	}
	__u64 marker = v8_slot(slots, marker_dist);
	if (!layout || (marker & 1)) { /* a context: a JavaScript frame (or no layout: said as such) */
		__u64 value;
		__u64 function = v8_slot(slots, function_dist);
		__u64 shared = 0;
		if (!layout)
			value = v8_value(0, V8_ERR_LAYOUT);
		else if ((function & 3) != 1)
			value = v8_value(0, V8_ERR_BAD_FUNCTION);
		else if (bpf_probe_read_user(&shared, 8, (void *)(function - 1 + shared_off)))
			value = v8_value(0, V8_ERR_READ);
		else if ((shared & 3) != 1 || shared >= (1ULL << 47))
			value = v8_value(0, V8_ERR_BAD_SHARED);
		else {
			__u64 offset = V8_OFFSET_UNKNOWN;
			__u64 raw = v8_slot(slots, offset_dist);
			if ((aux & V8_AUX_BUILTINS) && (raw & 1) == 0) { /* a Smi: an interpreted frame's offset */
				__s64 v = (__s64)raw >> 32;
				if (v >= 0 && v < V8_OFFSET_UNKNOWN)
					offset = v;
			}
			value = v8_value(shared - 1, offset);
		}
		__u32 idx = st->w.base + st->w.n - 1;
		if (st->w.n > 0 && idx < MAX_FRAMES)
			s->frames[idx] = (value & ((1ULL << FRAME_TYPE_SHIFT) - 1)) | FRAME_TAG(FRAME_TYPE_V8);
		st->tagged = 1;
	}
	__u64 saved_bp = slots[6], ra = slots[7];
	if (saved_bp != 0 && saved_bp <= bp)
		return unwind_stop(&st->w, s, STOP_NO_PROGRESS);
	if (ra == 0)
		return unwind_stop(&st->w, s, STOP_ZERO_RA);
	st->table_frames++;
	st->w.sp = bp + 16;
	st->w.pc = ra;
	st->w.bp = saved_bp;
	st->w.bp_known = 1;
	st->w.exact_pc = 0;
	return 0;
}

#endif
