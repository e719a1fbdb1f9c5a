/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one definition of what Loupe's BPF programs and Java exchange: the sample record, the counters,
 * the config and the unwind maps, and the constants in them. Java (dev.loupe.bpf.KernelAbi) declares the
 * same layouts and checks them, and every enumerator of the enums in struct abi_constants, against the
 * compiled object's BTF when it is opened, so a change here that Java does not follow fails loudly.
 * Shared constants are therefore enumerators, not #defines: only types reach BTF.
 */
#ifndef LOUPE_ABI_H
#define LOUPE_ABI_H

#include <linux/types.h>

#include "pid_ns_abi.h"

enum sample_limit {
	MAX_KERNEL_FRAMES = 127,
	MAX_USER_FRAMES = 127,
	TASK_COMM_LEN = 16,
	MAX_SAMPLE_MAPPINGS = 8, /* mappings a sample's walk found itself (struct sampled_mapping) */
};
#define MAX_FRAMES (MAX_KERNEL_FRAMES + MAX_USER_FRAMES)

/*
 * A mapping the walk found itself (bpf_find_vma), as the process's mm said at sampling time: enough for Java to
 * name the frames in it without /proc/PID/maps, which a process that exited no longer has. dev is the kernel's
 * encoding of the file's super block device (MAJOR = dev >> 20, MINOR = dev & 0xfffff), as /proc/PID/maps prints it.
 */
enum sampled_mapping_kind {
	SAMPLED_FILE = 0, /* a file: dev, ino, offset (bytes into the file at start) */
	SAMPLED_VDSO = 1, /* the vdso (no file; offset 0) */
	SAMPLED_ANON = 2, /* executable memory no file backs: a JIT's code */
};
struct sampled_mapping {
	__u64 start;
	__u64 end;
	__u64 offset;
	__u64 dev;
	__u64 ino;
	__u32 kind;       /* SAMPLED_* */
	__u32 reserved;
};

/*
 * Ring-buffer record, one per sample; variable length: only the used frames are sent. pid and tid are as
 * Java's /proc names them (see pid_ns_abi.h): the kernel's own outside a container; 0 for a task
 * outside Java's PID namespace (SAMPLE_F_PID_OUTSIDE), which has no user stack either.
 */
struct sample {
	__u32 pid;            /* tgid, in Java's PID namespace */
	__u32 tid;
	__u32 cpu;
	__u16 kernel_frames;
	__u16 user_frames;
	char comm[TASK_COMM_LEN];        /* process (group leader) name */
	char thread_comm[TASK_COMM_LEN]; /* thread name */
	__u64 ktime_ns;
	__u32 flags;          /* SAMPLE_F_* */
	__u16 mappings;       /* struct sampled_mapping entries right after the used frames */
	__u16 off_cpu_state;  /* SAMPLE_F_OFF_CPU: enum off_cpu_state; else 0 */
	__u64 start_boottime; /* process start, ns since boot: /proc/PID/stat's starttime, exact (PID reuse) */
	__u32 host_pid;       /* tgid and tid in the initial PID namespace, as the kernel names them */
	__u32 host_tid;
	__u64 off_cpu_ns;     /* SAMPLE_F_OFF_CPU_END: how long the wait lasted; else 0 */
	__u64 frames[MAX_FRAMES]; /* kernel frames (leaf first), then user frames (leaf first) */
	/*
	 * Room only: the record carries its `mappings` entries right after its used frames (at
	 * frames[kernel_frames + user_frames]), so the record stays as long as what it holds.
	 */
	struct sampled_mapping mapping_room[MAX_SAMPLE_MAPPINGS];
};

enum sample_flag {
	SAMPLE_F_USER_TRUNCATED  = 1,
	SAMPLE_F_USER_READ_ERROR = 2,
	SAMPLE_F_KERNEL_ERROR    = 4,
	SAMPLE_F_FP_FALLBACK     = 8,  /* frames in a file whose table is not in the kernel (yet): frame pointers */
	SAMPLE_F_UNWIND_STOPPED  = 16, /* the user stack ends in a marker frame naming why */
	SAMPLE_F_PID_OUTSIDE     = 32, /* the task is outside Java's PID namespace: pid, tid 0, no user stack */
	/*
	 * Not a sample: the process exited (its last thread), a header without frames written by process_exit; its
	 * samples precede it in the ring buffer. pid, comm and start_boottime name the process, ktime_ns the exit.
	 */
	SAMPLE_F_PROCESS_EXIT    = 64,
	/*
	 * The walk met code that needs the process registered (anonymous executable memory: a JIT's; a file a runtime
	 * needs per-process state for, FILE_F_NEEDS_PROCESS) and the process has no unwind entry.
	 */
	SAMPLE_F_NEEDS_PROCESS   = 128,
	/*
	 * Off-CPU (sched_switch): a thread switched out, its stack where it waits; ktime_ns is the switch-out, the state
	 * off_cpu_state. Its wait's length comes later, when it is switched in again, in a header-only record
	 * SAMPLE_F_OFF_CPU_END of the same host_tid and ktime_ns, with off_cpu_ns set: Java joins the two.
	 */
	SAMPLE_F_OFF_CPU         = 256,
	SAMPLE_F_OFF_CPU_END     = 512,
};

/* Why a recorded thread left the CPU: sched_switch's prev_state (and preempt). */
enum off_cpu_state {
	OFF_CPU_RUNNABLE = 1, /* preempted or yielded while runnable: the wait is run-queue time */
	OFF_CPU_SLEEPING = 2, /* TASK_INTERRUPTIBLE: sleep, poll, futex, socket */
	OFF_CPU_BLOCKED  = 3, /* TASK_UNINTERRUPTIBLE (D): disk I/O, some locks */
	OFF_CPU_STOPPED  = 4, /* any other state: stopped, traced */
};

/*
 * A user "frame" that is not an address: UNWIND_MARKER | reason (dev.loupe.unwinder.ehframe.StopReason
 * codes), every bit above the reason set. User addresses are below 2^47, so the top bits tell markers
 * apart. Checked through its reason width: an enumerator is an int (clang 14 writes no 64-bit enums).
 */
enum unwind_marker {
	UNWIND_REASON_BITS = 16,
};
#define UNWIND_MARKER (~0ULL << UNWIND_REASON_BITS)

/* Per-CPU counters, indexes into the stats map. */
enum stat {
	STAT_SAMPLES = 0,      /* samples seen (after idle/filter) */
	STAT_IDLE,             /* samples on the idle task, ignored */
	STAT_FILTERED,         /* samples of pids outside the filter */
	STAT_RINGBUF_DROPS,    /* ring buffer full: sample lost */
	STAT_USER_READ_ERRORS, /* frame pointer chain unreadable (stack stops there) */
	STAT_USER_TRUNCATED,   /* more than MAX_USER_FRAMES frames */
	STAT_KERNEL_ERRORS,    /* bpf_get_stack failed */
	STAT_FP_FALLBACK,      /* samples of processes without unwind state (frame pointers only) */
	STAT_UNWIND_STOPPED,   /* user stacks that ended early with a reason (marker frame) */
	STAT_TABLE_FRAMES,     /* frames unwound with an eh_frame table */
	STAT_FP_FRAMES,        /* frames unwound with frame pointers */
	STAT_PID_OUTSIDE,      /* samples of tasks outside Java's PID namespace (no pid, no user stack) */
	STAT_FP_NO_FDE_FRAMES, /* frames in a table's code without unwind info stepped by checked frame pointers */
	STAT_PROCESS_EXITS,    /* exit records written (SAMPLE_F_PROCESS_EXIT) */
	STAT_EXIT_DROPS,       /* exit records lost: ring buffer full (Java's periodic /proc scan finds those exits) */
	STAT_VMA_LOOKUPS,      /* mappings the walk found itself (bpf_find_vma) */
	STAT_VMA_LOOKUP_FAILURES, /* bpf_find_vma found no mapping or could not take the mm's lock (the walk stops there) */
	STAT_FILE_TABLE_MISSES,   /* mappings found of files with no table in the kernel (or an older file's): frame pointers */
	STAT_OFF_CPU_SWITCHES,    /* switch-outs of user threads seen by the off-CPU program (before the probability gate) */
	STAT_OFF_CPU_RECORDED,    /* switch-outs recorded (their stack written) */
	STAT_OFF_CPU_DROPS,       /* switch-out records lost: ring buffer full */
	STAT_OFF_CPU_END_DROPS,   /* switch-in records lost: ring buffer full (Java drops the stack it waits for) */
	STAT_MAX
};

/* Written once by Java before sampling starts (config map, key 0). */
struct config {
	__u32 filter_pids;  /* 1: only pids in pid_filter */
	__u32 wakeup_bytes; /* wake user space once this much data is waiting */
	/* Off-CPU: a switch-out is recorded when bpf_get_prandom_u32() < this (probability * 2^32; 0: never). */
	__u64 off_cpu_threshold;
	__u32 skip_tgid;    /* the kernel's tgid of a process whose waits are not recorded (the agent's own); 0: none */
	__u32 reserved;
};

/*
 * Unwind tables (built in Java from .eh_frame, see dev.loupe.unwinder.ehframe.UnwindTable): every table
 * lives in slices of four shared arrays, so one table serves every process that maps its binary.
 *   unwind_tables[table_id] -> where its pages, rows and rules start
 *   unwind_pages[page_start + p]  one 64 KiB page of PCs: {first_row (table-local), row_count}
 *   unwind_rows[row_start + r]    u32: pc_low (bits 0-15) | rule index (bits 16-31)
 *   unwind_rules[rule_start + i]  u64 rule: kind u8 | aux u8 | rbp_offset s16 | cfa_offset s32
 */
struct unwind_table {
	__u64 pc_base;    /* file vaddr of page 0 */
	__u32 page_start;
	__u32 page_count; /* 0: not loaded (evicted) */
	__u32 row_start;
	__u32 rule_start;
};

struct unwind_page {
	__u32 first_row;
	__u32 row_count;
};

/*
 * A rule's kind (dev.loupe.unwinder.ehframe.UnwindRule.KIND_*): the registry of kinds. Native code's kinds come
 * first; from RULE_RUNTIME_FIRST on each kind is a runtime's frame, stepped by that runtime's own header
 * (hotspot.bpf.h, ...) through runtime_step in profiler.bpf.c, the one place that dispatches them.
 */
enum rule_kind {
	RULE_CFA_RSP = 0,
	RULE_CFA_RBP = 1,
	RULE_PLT     = 2,
	RULE_SIGNAL  = 3,
	RULE_STOP    = 4,
	RULE_RUNTIME_FIRST = 5,
	RULE_JAVA_INTERP = RULE_RUNTIME_FIRST, /* hotspot.bpf.h: HotSpot's template interpreter */
	RULE_PYTHON_EVAL = 6, /* python.bpf.h: CPython's _PyEval_EvalFrameDefault; aux's high nibble the native kind */
	RULE_PYTHON_DATA = 7, /* python.bpf.h: not a pc's rule, a word of the process's CPython layout (rules 0..) */
	RULE_HOTSPOT_CODE = 8, /* hotspot.bpf.h: a code heap's memory no blob of the last scan held: its segment map */
	RULE_HOTSPOT_DATA = 9, /* hotspot.bpf.h: not a pc's rule, a word of the JVM's code heap layout (rules 0..) */
	RULE_V8_FRAME = 10, /* v8.bpf.h: V8's code (embedded builtins, JIT code): a frame-pointer frame, named if JavaScript */
	RULE_V8_DATA = 11,  /* v8.bpf.h: not a pc's rule, the word of the V8 layout (rule 0 of the table) */
};

/*
 * Tagged frames: a user "frame" that is a runtime's own value (an interpreter frame's Method*, ...) rather than a
 * pc, written by the runtime's step in place of the native frame it stands for. Bits FRAME_TYPE_SHIFT..62 hold the
 * frame type, the bits below the value; bit 63 is clear, so neither a user address (below 2^47) nor a marker (every
 * top bit set) is one. enum frame_type is the registry of types (dev.loupe.unwinder.runtime.FrameType).
 */
enum frame_tag {
	FRAME_TYPE_SHIFT = 56,
};
enum frame_type {
	FRAME_TYPE_HOTSPOT_METHOD = 0x40, /* hotspot.bpf.h: an interpreter frame's Method* and bci (enum hotspot_interp_frame) */
	FRAME_TYPE_PYTHON = 0x41,         /* python.bpf.h: a code object >> 4 and its instruction index (enum python_abi) */
	FRAME_TYPE_V8 = 0x42,             /* v8.bpf.h: a SharedFunctionInfo >> 3 and its bytecode offset (enum v8_abi) */
};
#define FRAME_TAG(type) ((__u64)(type) << FRAME_TYPE_SHIFT)

/*
 * HotSpot's code heaps walked by their segment maps (RULE_HOTSPOT_CODE; spec dev.loupe.unwinder.hotspot.SegmentMapStep):
 * the code table's first HOTSPOT_DATA_WORDS rules are RULE_HOTSPOT_DATA words (payload above the kind byte):
 * word 0, fields of HeapBlock and CodeBlob, 10 bits each (offset 8 bits, log2 of the width 2 bits), from bit 0:
 * block length, block used, frame size, frame-complete offset, code begin; word 1: code end (10 bits), bit 10:
 * code begin/end are absolute pointers (else offsets from the blob), bits 11..18: sizeof(HeapBlock); words 2 + 2h
 * and 3 + 2h for heap h < HOTSPOT_MAX_HEAPS: its low address | log2 segment size << 47, its segment map's address
 * (0: no heap). Bits 52..55 of every word's payload hold its index (a table's rules are de-duplicated).
 */
enum hotspot_code_heap {
	HOTSPOT_DATA_WORDS = 10,
	HOTSPOT_MAX_HEAPS = 4,
	HOTSPOT_SEGMAP_HOPS = 48,      /* segment map hops back to a block's start, at most (254 segments each) */
	HOTSPOT_MAX_FRAME_BYTES = 1 << 20,
};

/*
 * HotSpot interpreter frames (dev.loupe.unwinder.hotspot.InterpreterFrameStep): where one keeps the sender's SP and
 * its Method*, from RBP (x86-64, JDK 8 to 25). A FRAME_TYPE_HOTSPOT_METHOD value is the Method* >> HOTSPOT_METHOD_SHIFT
 * above HOTSPOT_BCI_BITS of bytecode index, HOTSPOT_BCI_UNKNOWN when unknown or too large. The RULE_JAVA_INTERP rule
 * carries what the bci needs: aux the bcp's slot in words below RBP (0: no bci), then one byte each from bit 16:
 * Method::_constMethod's offset, sizeof(ConstMethod), ConstMethod::_code_size's offset (a u16).
 */
enum hotspot_interp_frame {
	HOTSPOT_INTERP_SENDER_SP_OFFSET = -8,
	HOTSPOT_INTERP_METHOD_OFFSET    = -24,
	HOTSPOT_METHOD_SHIFT = 3,
	HOTSPOT_BCI_BITS = 12,
	HOTSPOT_BCI_UNKNOWN = (1 << 12) - 1,
};

/*
 * CPython frames (python.bpf.h; dev.loupe.unwinder.python). A FRAME_TYPE_PYTHON value is the code object's address
 * >> PYTHON_CODE_SHIFT (objects are 16-byte aligned) above PYTHON_INDEX_BITS of instruction index (code units);
 * PYTHON_INDEX_UNKNOWN when it does not fit. A code address of 0 is an error frame, the index its enum python_error.
 * The process's layout is PYTHON_DATA_WORDS rules of kind RULE_PYTHON_DATA, the first of its code table.
 */
enum python_abi {
	PYTHON_CODE_SHIFT = 4,
	PYTHON_INDEX_BITS = 13,
	PYTHON_INDEX_UNKNOWN = (1 << 13) - 1,
	PYTHON_DATA_WORDS = 5,
	PYTHON_MAX_THREADS = 64,         /* thread states searched for the sampled thread's */
	PYTHON_MAX_FRAMES_PER_EVAL = 64, /* interpreter frames one _PyEval_EvalFrameDefault call runs, at most */
	PYTHON_NO_HOLDER = 0xffff,       /* the thread state holds its current frame itself (3.13+) */
	PYTHON_FRAME_BYTES = 128,        /* a frame's head read at once: every field the walk reads lies in it */
	PYTHON_BLOCK_BYTES = 1024,       /* 3.11+: a read of a frame's head and the frames below it (its callers) */
	PYTHON_PAGE_BYTES = 4096,        /* a block does not start below its frame's page (which may be a chunk's first) */
};
/* How a CPython version links its frames (PythonLayout.Variant). */
enum python_variant {
	PYTHON_V39 = 1,  /* 3.9, 3.10: PyFrameObject chain (f_back), f_lasti an int; one per eval call */
	PYTHON_V311 = 2, /* 3.11: _PyInterpreterFrame via cframe, prev_instr, is_entry ends a call's frames */
	PYTHON_V312 = 3, /* 3.12: as 3.11, but an owner byte: the C stack's entry frame ends a call's frames */
	PYTHON_V313 = 4, /* 3.13+: tstate->current_frame, instr_ptr, f_executable (low bit a tag in 3.14) */
};
enum python_error {
	PYTHON_ERR_NO_THREAD = 1,    /* no thread state of the interpreter is the sampled thread's */
	PYTHON_ERR_READ = 2,         /* a frame or thread state could not be read (torn chain) */
	PYTHON_ERR_BAD_CODE = 3,     /* a frame's code pointer is not an aligned user address */
	PYTHON_ERR_NO_FRAMES = 4,    /* the eval call's frames were used up before it (chain shorter than the C stack) */
	PYTHON_ERR_LAYOUT = 5,       /* the table's layout words are missing or malformed */
};

/* A rule's aux byte for the CFA kinds: how the caller's RBP is recovered (UnwindRule.RBP_*). */
/*
 * V8's frames (v8.bpf.h; dev.loupe.unwinder.v8.V8FrameStep). Every frame of V8's code keeps a frame pointer; a
 * JavaScript frame holds its context (a heap object: low bit set) in the marker slot, any other frame a Smi type
 * marker (low bit clear). A FRAME_TYPE_V8 value is the JavaScript frame's SharedFunctionInfo (untagged) >>
 * V8_OBJECT_SHIFT above V8_OFFSET_BITS of bytecode offset (as the frame holds it; V8_OFFSET_UNKNOWN when not
 * interpreted or too large). An object of 0 is an error frame, the offset its enum v8_error. The table's rule 0 is the
 * layout word (RULE_V8_DATA): byte 1 the marker slot's distance below the frame pointer, byte 2 the function's, byte 3
 * the bytecode offset's, bytes 4-5 JSFunction's shared field offset.
 */
enum v8_abi {
	V8_OBJECT_SHIFT = 3,
	V8_OFFSET_BITS = 12,
	V8_OFFSET_UNKNOWN = (1 << 12) - 1,
	V8_DATA_WORDS = 1,
	V8_SLOTS_BYTES = 48,         /* the frame's slots below the frame pointer read at once: every slot used lies there */
	V8_MAX_FRAME_BYTES = 1 << 20,
	V8_AUX_BUILTINS = 1,         /* RULE_V8_FRAME's aux: the embedded builtins (the interpreter among them) */
};
enum v8_error {
	V8_ERR_BAD_FUNCTION = 1, /* a JavaScript frame's function slot holds no heap object */
	V8_ERR_READ = 2,         /* its JSFunction could not be read */
	V8_ERR_BAD_SHARED = 3,   /* its shared field holds no heap object */
	V8_ERR_LAYOUT = 4,       /* the table's layout word is missing */
};

enum rbp_rule {
	RBP_UNCHANGED = 0,
	RBP_SAVED     = 1,
	RBP_UNKNOWN   = 2,
};

/* rt_sigframe after __restore_rt's return address was popped: uc_mcontext at 40 (UnwindRule.SIGNAL_*). */
enum signal_frame_offset {
	SIGNAL_RBP_OFFSET = 40 + 10 * 8,
	SIGNAL_RSP_OFFSET = 40 + 15 * 8,
	SIGNAL_RIP_OFFSET = 40 + 16 * 8,
};

/* Stop reasons the walker itself finds (codes shared with Java's StopReason). */
enum stop_reason {
	STOP_NO_UNWIND_INFO = 1,
	STOP_END_OF_STACK   = 2,
	STOP_MALFORMED      = 8,
	STOP_NO_TABLE       = 32,
	STOP_READ_FAILED    = 33,
	STOP_RBP_UNKNOWN    = 34,
	STOP_NO_PROGRESS    = 35,
	STOP_ZERO_RA        = 37,
};

/*
 * Code a binary's table has no unwind info for (no FDE: V8's builtins, hand-written assembly) is stepped by
 * its frame pointer when the frame passes the checks of no_fde_step; the frame must lie at most this far
 * above the stack pointer (ReferenceUnwinder.NO_FDE_MAX_FRAME_BYTES).
 */
enum no_fde_limit {
	NO_FDE_MAX_FRAME_BYTES = 8 << 20,
};

/* How a process's executable mapping is unwound. */
enum mapping_kind {
	MAPPING_FP    = 0, /* frame pointers: JIT/anonymous code, Go */
	MAPPING_TABLE = 1, /* table_id names its unwind table */
	MAPPING_STOP  = 2, /* no table can exist (table_id holds the reason code) */
};

/* One executable mapping; a process's mappings are a sorted slice of the mappings array. */
struct exec_mapping {
	__u64 start;
	__u64 end;
	__u64 bias;     /* runtime address - file vaddr */
	__u32 kind;     /* MAPPING_* */
	__u32 table_id; /* MAPPING_TABLE: the table; MAPPING_STOP: the reason */
};

/*
 * Tables by file (file_tables map): the walk finds the mapping of a pc itself (bpf_find_vma) and its file's table
 * by the file's identity, so a process is walkable from its first sample when its files' tables are in the kernel;
 * per-process entries (procs) remain for processes whose code needs them (runtimes). The key is the inode's super
 * block device (kernel encoding, see struct sampled_mapping) and inode number; size and mtime in the value tell a
 * file rewritten in place, or a reused inode, from the file the table was built from.
 */
struct file_key {
	__u64 dev;
	__u64 ino;
};
enum file_table_flag {
	FILE_F_NEEDS_PROCESS = 1, /* a runtime's file: a process mapping it needs its own entry (SAMPLE_F_NEEDS_PROCESS) */
};
struct file_table {
	__u64 size;
	__s64 mtime_sec;
	__u32 mtime_nsec;
	__u32 kind;        /* MAPPING_TABLE or MAPPING_STOP */
	__u32 table_id;    /* MAPPING_TABLE: the table; MAPPING_STOP: the reason */
	__u32 flags;       /* FILE_F_* */
	__s64 vaddr_delta; /* p_vaddr - p_offset of the file's executable segments: file offset -> vaddr */
};
/* The vdso's entry: no file, so a key no file has. */
enum vdso_key {
	VDSO_KEY_DEV = 0,
	VDSO_KEY_INO = 0,
};

/*
 * Per process (tgid): its slice of the mappings array, valid for this process start only. The start is
 * in clock ticks (USER_HZ, 10 ms), as /proc/PID/stat gives it, so Java can register a process it found
 * in /proc before any sample.
 */
enum proc_clock {
	NSEC_PER_TICK = 10000000, /* dev.loupe.unwinder.proc.ProcessRegistry.NANOS_PER_TICK */
};
struct proc_unwind {
	__u64 start_ticks;
	__u32 first;
	__u32 count;
};

/*
 * The walker's bounded binary searches. A process's mappings: up to 2^MAPPING_SEARCH_STEPS (4096) executable
 * mappings; Java registers no process with more (UnwindTarget.MAX_MAPPINGS_PER_PROCESS). A page's rows: at most 2^16
 * (UnwindTable.PAGE_SHIFT: pc_low is 16 bits, so rows of a page are distinct).
 */
enum mapping_search {
	MAPPING_SEARCH_STEPS = 12,
};
enum row_search {
	ROW_SEARCH_STEPS = 16,
};

/*
 * One member per enum Java checks. clang writes into BTF only the types something uses; profiler.bpf.c's
 * abi_constants global has this type, so every enumerator above reaches the object's BTF.
 */
struct abi_constants {
	enum sample_limit sample_limit;
	enum sample_flag sample_flag;
	enum off_cpu_state off_cpu_state;
	enum unwind_marker unwind_marker;
	enum stat stat;
	enum rule_kind rule_kind;
	enum frame_tag frame_tag;
	enum frame_type frame_type;
	enum hotspot_interp_frame hotspot_interp_frame;
	enum hotspot_code_heap hotspot_code_heap;
	enum python_abi python_abi;
	enum python_variant python_variant;
	enum python_error python_error;
	enum v8_abi v8_abi;
	enum v8_error v8_error;
	enum mapping_search mapping_search;
	enum row_search row_search;
	enum rbp_rule rbp_rule;
	enum signal_frame_offset signal_frame_offset;
	enum stop_reason stop_reason;
	enum mapping_kind mapping_kind;
	enum proc_clock proc_clock;
	enum no_fde_limit no_fde_limit;
	enum pid_ns_mode pid_ns_mode;
	enum sampled_mapping_kind sampled_mapping_kind;
	enum file_table_flag file_table_flag;
	enum vdso_key vdso_key;
};

#endif
