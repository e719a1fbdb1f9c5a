/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The current task's ids as Java's /proc names them (pid_ns_abi.h). Include after bpf_helpers.h. */
#ifndef PID_NS_BPF_H
#define PID_NS_BPF_H

#include "pid_ns_abi.h"

/* Set by Java before load; zero: the initial namespace. */
const volatile struct pid_ns_config pid_ns SEC(".rodata.pid_ns") = {};

/*
 * Turns *pid_tgid (bpf_get_current_pid_tgid's tgid << 32 | pid) into Java's namespace's ids. Returns 1, with
 * *pid_tgid 0, for a task outside it: the helper names only tasks of that namespace itself (those of a
 * namespace nested in it are outside too). A constant to the verifier in the initial namespace: nothing.
 */
static __always_inline int to_java_pids(__u64 *pid_tgid)
{
	if (pid_ns.mode == PID_NS_INITIAL)
		return 0;
	struct bpf_pidns_info ns = {};
	if (pid_ns.mode == PID_NS_TRANSLATE && !bpf_get_ns_current_pid_tgid(pid_ns.dev, pid_ns.ino, &ns, sizeof(ns))) {
		*pid_tgid = (__u64)ns.tgid << 32 | ns.pid;
		return 0;
	}
	*pid_tgid = 0;
	return 1;
}

#endif
