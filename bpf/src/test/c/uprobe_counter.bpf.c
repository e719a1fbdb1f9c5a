// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test-only second program: counts uprobe/uretprobe hits per BPF cookie, so tests can prove that a
 * second object loads beside the profiler and that links carry their cookies. Also hosts maps of the
 * kinds the map tests exercise (hash, per-CPU array, array).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);   /* cookie */
	__type(value, __u64); /* hits */
} hits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} percpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} plain SEC(".maps");

SEC("uprobe")
int count_hit(void *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 one = 1;
	__u64 *v = bpf_map_lookup_elem(&hits, &cookie);
	if (v)
		__sync_fetch_and_add(v, 1);
	else if (bpf_map_update_elem(&hits, &cookie, &one, BPF_NOEXIST))
		bpf_map_update_elem(&hits, &cookie, &one, BPF_ANY); /* lost a race: rare, tests run one thread */
	__u32 k = 0;
	__u64 *c = bpf_map_lookup_elem(&percpu, &k);
	if (c)
		*c += 1;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
