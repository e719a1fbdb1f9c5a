/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * HotSpot's runtime step for the walker: the template interpreter's frames (RULE_JAVA_INTERP), reported as their
 * Method* tagged FRAME_TYPE_HOTSPOT_METHOD. Included by profiler.bpf.c after the walk's state and helpers
 * (struct unwind_state, struct sample, unwind_stop), and dispatched from its runtime_step.
 */
#ifndef HOTSPOT_BPF_H
#define HOTSPOT_BPF_H

#include "loupe_abi.h"

/*
 * A HotSpot interpreter frame (RULE_JAVA_INTERP; dev.loupe.unwinder.hotspot.InterpreterFrameStep is its spec). The frame is
 * RBP-based: [bp] the caller's RBP, [bp+8] the return address, [bp-8] the sender's SP, [bp-24] the Method*. The
 * caller's SP is the sender SP (a compiled caller's adapter extended the stack for the callee's locals), unless
 * it is below bp+16 or implausibly far: then bp+16. The frame just pushed becomes the tagged Method*, which
 * names the method where the interpreter's PC names only the interpreter. Returns 1 to stop.
 */
static __always_inline long hotspot_interp_step(struct unwind_state *st, struct sample *s)
{
	if (!st->w.bp_known)
		return unwind_stop(&st->w, s, STOP_RBP_UNKNOWN);
	__u64 bp = st->w.bp;
	/* [bp-24] Method*, [bp-16] last SP, [bp-8] sender SP, [bp] caller's RBP, [bp+8] return address */
	__u64 f[5] = {};
	if (bpf_probe_read_user(f, sizeof(f), (void *)(bp + HOTSPOT_INTERP_METHOD_OFFSET)))
		return unwind_stop(&st->w, s, STOP_READ_FAILED);
	if (f[4] == 0)
		return unwind_stop(&st->w, s, STOP_ZERO_RA);
	__u64 sp = bp + 16;
	if (f[2] >= sp && f[2] - st->w.sp < NO_FDE_MAX_FRAME_BYTES)
		sp = f[2];
	if (sp <= st->w.sp)
		return unwind_stop(&st->w, s, STOP_NO_PROGRESS);
	__u64 method = f[0];
	if (method != 0 && method < (1ULL << 47) && st->w.n > 0) {
		__u32 idx = st->w.base + st->w.n - 1;
		if (idx < MAX_FRAMES)
			s->frames[idx] = method | FRAME_TAG(FRAME_TYPE_HOTSPOT_METHOD);
	}
	st->table_frames++;
	st->w.sp = sp;
	st->w.pc = f[4];
	st->w.bp = f[3];
	st->w.bp_known = 1;
	st->w.exact_pc = 0;
	return 0;
}

#endif
