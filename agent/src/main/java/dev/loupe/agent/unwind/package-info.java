/**
 * Unwind-table upload: registers processes, builds one table per binary from the unwinder and loads
 * tables and mappings into the kernel's unwind maps within a memory budget
 * ({@link dev.loupe.agent.unwind.UnwindTableUploader} over an {@link dev.loupe.agent.unwind.UnwindTarget}), and
 * the unwinder's values of the constants the kernel's walker shares, for the sampler's ABI check
 * ({@link dev.loupe.agent.unwind.UnwinderAbi}).
 * May import the leaves ({@code bpf}, {@code unwinder}) and {@code logging}; no other agent package.
 */
package dev.loupe.agent.unwind;
