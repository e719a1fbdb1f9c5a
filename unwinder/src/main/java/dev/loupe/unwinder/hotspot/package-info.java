/**
 * A running HotSpot JVM read from outside, without attaching: the layout tables libjvm.so exports for the
 * serviceability agent ({@code gHotSpotVMStructs}, {@code gHotSpotVMTypes}, {@code gHotSpotVMIntConstants},
 * {@code gHotSpotVMLongConstants} and the {@code gHotSpotVM*Entry*Offset}/{@code *ArrayStride} variables that
 * describe their entries) are found through libjvm's ELF symbols and read, with everything they describe, from
 * {@code /proc/PID/mem} ({@link dev.loupe.unwinder.proc.ProcessMemory}, read-only).
 *
 * <p>This package owns: finding libjvm in a process and its load bias; the VMStructs tables; the code cache
 * ({@link dev.loupe.unwinder.hotspot.CodeCache}: heaps, blobs with code range, frame size and frame-complete
 * point, for JIT unwind tables); naming a {@code Method*}; and the methods inlined at an nmethod's pc
 * ({@link dev.loupe.unwinder.hotspot.NmethodScopes}, from its debug information) with each one's bci; the source file and
 * line of a method's bci ({@link dev.loupe.unwinder.hotspot.MethodLines}, from its line number table). Field names and types come from the running JVM's
 * own table (e.g. CodeBlob's {@code _code_begin} in JDK 17 vs {@code _code_offset} in JDK 25, JDK 8's single
 * {@code CodeCache::_heap}), never from a version check. It imports only the unwinder's {@code elf} and {@code proc} packages, {@code ehframe} for the
 * code cache's unwind table ({@link dev.loupe.unwinder.hotspot.CodeCacheUnwindTable}), and the seam's
 * {@code runtime} and {@code lines} types it hands its frames out in.
 */
package dev.loupe.unwinder.hotspot;
