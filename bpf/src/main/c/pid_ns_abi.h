/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which pids Loupe's programs report (shared by loupe_abi.h and latency_abi.h; pid_ns.bpf.h applies it).
 * The kernel names tasks by their pids in the initial PID namespace; inside a container that pid may be
 * another process's in Java's /proc. Java sets struct pid_ns_config before load in the read-only section
 * .rodata.pid_ns, so the verifier knows its values and drops the branches a mode does not take: in the
 * initial namespace the loaded program is the one it was before namespaces were handled. Java checks both
 * against each object's BTF (dev.loupe.bpf.KernelAbi.PID_NS_CONFIG, SampledPids.Mode).
 */
#ifndef PID_NS_ABI_H
#define PID_NS_ABI_H

#include <linux/types.h>

enum pid_ns_mode {
	PID_NS_INITIAL     = 0, /* Java runs in the initial PID namespace: the kernel's pids are its pids */
	PID_NS_TRANSLATE   = 1, /* pids as seen from Java's namespace (dev, ino); a task not in it is outside */
	PID_NS_ALL_OUTSIDE = 2, /* another namespace, but bpf_get_ns_current_pid_tgid is missing: all outside */
};

struct pid_ns_config {
	__u32 mode;     /* PID_NS_* */
	__u32 reserved;
	__u64 dev;      /* Java's PID namespace: the nsfs device (kernel dev_t) and inode of /proc/self/ns/pid */
	__u64 ino;
};

#endif
