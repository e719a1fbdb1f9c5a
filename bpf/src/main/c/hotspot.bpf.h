/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * HotSpot's runtime step for the walker: the template interpreter's frames (RULE_JAVA_INTERP), reported as their
 * Method* and bci tagged FRAME_TYPE_HOTSPOT_METHOD. Included by profiler.bpf.c after the walk's state and helpers
 * (struct unwind_state, struct sample, unwind_stop), and dispatched from its runtime_step.
 */
#ifndef HOTSPOT_BPF_H
#define HOTSPOT_BPF_H

#include "loupe_abi.h"

/*
 * The bytecode index of the interpreter frame at bp running method (InterpreterFrameStep.bci is its spec): bcp -
 * (ConstMethod* + sizeof(ConstMethod)), below the method's code size; the bcp from the frame's slot, or in the leaf
 * frame interrupted in the interpreter itself from R13 (the slot is written only before calls). The rule gives the
 * offsets; HOTSPOT_BCI_UNKNOWN when it has none, a read fails or the bcp lies outside the bytecodes.
 */
static __always_inline __u64 hotspot_bci(struct unwind_state *st, __u64 rule, __u64 bp, __u64 method)
{
	__u64 slot = (rule >> 8) & 0xff;
	if (slot == 0)
		return HOTSPOT_BCI_UNKNOWN;
	__u64 bcp = st->leaf_r13;
	if (!(st->w.exact_pc && st->w.n == 1) &&
	    bpf_probe_read_user(&bcp, sizeof(bcp), (void *)(bp - 8 * slot)))
		return HOTSPOT_BCI_UNKNOWN;
	__u64 cm = 0;
	__u16 code_size = 0;
	if (bpf_probe_read_user(&cm, sizeof(cm), (void *)(method + ((rule >> 16) & 0xff))) ||
	    bpf_probe_read_user(&code_size, sizeof(code_size), (void *)(cm + ((rule >> 32) & 0xff))))
		return HOTSPOT_BCI_UNKNOWN;
	__u64 bci = bcp - cm - ((rule >> 24) & 0xff);
	return bci < code_size && bci < HOTSPOT_BCI_UNKNOWN ? bci : HOTSPOT_BCI_UNKNOWN;
}

/*
 * A HotSpot interpreter frame (RULE_JAVA_INTERP; dev.loupe.unwinder.hotspot.InterpreterFrameStep is its spec). The frame is
 * RBP-based: [bp] the caller's RBP, [bp+8] the return address, [bp-8] the sender's SP, [bp-24] the Method*. The
 * caller's SP is the sender SP (a compiled caller's adapter extended the stack for the callee's locals), unless
 * it is below bp+16 or implausibly far: then bp+16. The frame just pushed becomes the tagged Method* and bci, which
 * name the method and line where the interpreter's PC names only the interpreter. Returns 1 to stop.
 */
static __always_inline long hotspot_interp_step(struct unwind_state *st, struct sample *s, __u64 rule)
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
	if (method != 0 && method < (1ULL << 47) && (method & ((1 << HOTSPOT_METHOD_SHIFT) - 1)) == 0 && st->w.n > 0) {
		__u32 idx = st->w.base + st->w.n - 1;
		__u64 bci = hotspot_bci(st, rule, bp, method);
		if (idx < MAX_FRAMES)
			s->frames[idx] = (method >> HOTSPOT_METHOD_SHIFT) << HOTSPOT_BCI_BITS | bci |
					 FRAME_TAG(FRAME_TYPE_HOTSPOT_METHOD);
	}
	st->table_frames++;
	st->w.sp = sp;
	st->w.pc = f[4];
	st->w.bp = f[3];
	st->w.bp_known = 1;
	st->w.exact_pc = 0;
	return 0;
}

/* Word k of the code table's HotSpot layout (its rule k), payload only; 0 if the table has no such word. */
static __always_inline int hotspot_word(struct unwind_state *st, __u32 k, __u64 *out)
{
	__u32 ridx = st->t_rule_start + k;
	__u64 *r = bpf_map_lookup_elem(&unwind_rules, &ridx);
	if (!r || (*r & 0xff) != RULE_HOTSPOT_DATA || ((*r >> 60) & 0xf) != k)
		return 0;
	*out = *r >> 8;
	return 1;
}

/* A field of another process's memory at base + the offset in a 10-bit field descriptor (offset, log2 width). */
static __always_inline int hotspot_field(__u64 base, __u64 desc, __u64 *out)
{
	__u64 v = 0;
	__u32 width = 1U << ((desc >> 8) & 3);
	if (bpf_probe_read_user(&v, 8, (void *)(base + (desc & 0xff))))
		return 0;
	if (width < 8)
		v &= (1ULL << (width * 8)) - 1;
	*out = v;
	return 1;
}

/* A field's value as a signed integer of its width (int or int16_t: the frame size, the frame-complete offset). */
static __always_inline __s64 hotspot_signed(__u64 v, __u64 desc)
{
	__u32 shift = 64 - 8 * (1U << ((desc >> 8) & 3));
	return (__s64)(v << shift) >> shift;
}

/*
 * Code in a code heap that no blob of the last user-space scan held (RULE_HOTSPOT_CODE): compiled, or a stub made,
 * since. The heap's segment map (one byte a segment: 0 at a block's first, else how many segments to hop back, 0xFF
 * unused) gives the block; the CodeBlob after the block's header gives the code range, the frame-complete offset and
 * the frame size, which step the frame as CodeCacheUnwindTable's rows would (CFA = RSP + 8 before the frame is
 * complete, else RSP + frame size with the caller's RBP at CFA-16). Anything that does not hold together (a read
 * that fails, a free or torn block, a pc outside its blob's code, a blob without a frame size) leaves the frame to
 * the checked frame-pointer step, as before. dev.loupe.unwinder.hotspot.SegmentMapStep is its spec. Returns 1 to stop.
 */
static __noinline long hotspot_code_step(struct unwind_state *st, struct sample *s)
{
	__u64 pc = st->w.exact_pc ? st->w.pc : st->w.pc - 1;
	__u64 fields = 0, more = 0, low = 0, segmap = 0, log2 = 0;
	if (!hotspot_word(st, 0, &fields) || !hotspot_word(st, 1, &more))
		goto fallback;
	/* The heap: the highest low address at or below pc (heaps are disjoint; the table gives this kind only inside one). */
#pragma clang loop unroll(full)
	for (__u32 h = 0; h < HOTSPOT_MAX_HEAPS; h++) {
		__u64 a = 0, m = 0;
		if (!hotspot_word(st, 2 + 2 * h, &a) || !hotspot_word(st, 3 + 2 * h, &m))
			goto fallback;
		__u64 l = a & ((1ULL << 47) - 1);
		if (l != 0 && l <= pc && l > low) {
			low = l;
			log2 = (a >> 47) & 31;
			segmap = m & ((1ULL << 47) - 1);
		}
	}
	if (low == 0 || segmap == 0 || log2 < 4 || log2 > 20)
		goto fallback;
	__u64 idx = (pc - low) >> log2;
	int found = 0;
#pragma clang loop unroll(disable)
	for (int k = 0; k < HOTSPOT_SEGMAP_HOPS; k++) {
		__u8 hop = 0;
		if (bpf_probe_read_user(&hop, 1, (void *)(segmap + idx)))
			goto fallback;
		if (hop == 0) {
			found = 1;
			break;
		}
		if (hop == 0xff || hop > idx)
			goto fallback;
		idx -= hop;
	}
	if (!found)
		goto fallback;
	__u64 block = low + (idx << log2);
	__u64 length = 0, used = 0;
	if (!hotspot_field(block, fields, &length) || !hotspot_field(block, fields >> 10, &used) || !used || length == 0 ||
	    length > (1ULL << 32))
		goto fallback;
	__u64 block_end = block + (length << log2);
	if (pc >= block_end)
		goto fallback;
	__u64 blob = block + ((more >> 11) & 0xff);
	__u64 frame_words = 0, complete = 0, begin = 0, end = 0;
	if (!hotspot_field(blob, fields >> 20, &frame_words) || !hotspot_field(blob, fields >> 30, &complete) ||
	    !hotspot_field(blob, fields >> 40, &begin) || !hotspot_field(blob, more, &end))
		goto fallback;
	if (!((more >> 10) & 1)) { /* offsets from the blob (JDK 23+): ints */
		begin = blob + (__u32)begin;
		end = blob + (__u32)end;
	}
	if (begin < blob || end < begin || end > block_end || pc < begin || pc >= end)
		goto fallback;
	__s64 fw = hotspot_signed(frame_words, fields >> 20);
	if (fw <= 0 || fw > HOTSPOT_MAX_FRAME_BYTES / 8)
		goto fallback;
	__s64 fco = hotspot_signed(complete, fields >> 30);
	__u64 cfa = st->w.sp + 8 * (__u64)fw;
	int entry = fco > 0 && begin + fco < end && pc < begin + fco; /* before push rbp: only the return address */
	if (entry)
		cfa = st->w.sp + 8;
	__u64 pair[2] = {}; /* the caller's RBP at CFA-16, the return address at CFA-8 */
	if (bpf_probe_read_user(entry ? &pair[1] : &pair[0], entry ? 8 : 16, (void *)(cfa - (entry ? 8 : 16))))
		goto fallback;
	if (pair[1] == 0)
		goto fallback;
	st->table_frames++;
	if (!entry) {
		st->w.bp = pair[0];
		st->w.bp_known = 1;
	}
	st->w.sp = cfa;
	st->w.pc = pair[1];
	st->w.exact_pc = 0;
	return 0;
fallback:
	return no_fde_step(st, s);
}

#endif
