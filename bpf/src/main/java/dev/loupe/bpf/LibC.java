package dev.loupe.bpf;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** The few libc calls Loupe needs: perf_event_open through syscall(2), close, strerror, vsnprintf. */
final class LibC {
    static final long SYS_PERF_EVENT_OPEN = 298; // x86-64
    static final int PERF_TYPE_SOFTWARE = 1;
    static final int PERF_COUNT_SW_CPU_CLOCK = 0;
    static final long PERF_FLAG_FD_CLOEXEC = 8;
    static final int PERF_ATTR_SIZE = 128;
    private static final long ATTR_FLAG_FREQ = 1L << 10;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    // syscall is variadic: every variadic argument travels as a long.
    private static final MethodHandle SYSCALL5 = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("syscall"),
            FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
            Linker.Option.firstVariadicArg(1), Linker.Option.captureCallState("errno"));
    private static final MethodHandle CLOSE = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("close"), FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle STRERROR = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("strerror"), FunctionDescriptor.of(ADDRESS, JAVA_INT));
    // va_list is an array type on x86-64 SysV, so it is passed as a pointer.
    static final MethodHandle VSNPRINTF = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("vsnprintf"),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS));

    private LibC() {}

    /**
     * Opens one software CPU-clock sampling event on {@code cpu} for all processes, in frequency mode.
     * Returns the fd or throws with errno.
     */
    static int perfEventOpenCpuClock(int cpu, int frequencyHz) throws BpfException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(PERF_ATTR_SIZE, 8); // zeroed
            attr.set(JAVA_INT, 0, PERF_TYPE_SOFTWARE);
            attr.set(JAVA_INT, 4, PERF_ATTR_SIZE);
            attr.set(JAVA_LONG, 8, PERF_COUNT_SW_CPU_CLOCK);
            attr.set(JAVA_LONG, 16, frequencyHz); // sample_freq (freq bit set below)
            attr.set(JAVA_LONG, 40, ATTR_FLAG_FREQ);
            MemorySegment state = arena.allocate(CAPTURE);
            long fd = (long) SYSCALL5.invokeExact(state, SYS_PERF_EVENT_OPEN, attr.address(), -1L, (long) cpu, -1L,
                    PERF_FLAG_FD_CLOEXEC);
            if (fd < 0) {
                int errno = (int) ERRNO.get(state, 0L);
                throw new BpfException("perf_event_open(PERF_TYPE_SOFTWARE/CPU_CLOCK, cpu " + cpu + ", " + frequencyHz
                        + " Hz) failed: " + Errno.describe(errno), errno);
            }
            return (int) fd;
        } catch (BpfException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("perf_event_open downcall failed", t);
        }
    }

    static void close(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    static String strerror(int errno) {
        try {
            MemorySegment s = (MemorySegment) STRERROR.invokeExact(errno);
            return s.reinterpret(256).getString(0);
        } catch (Throwable t) {
            return "errno " + errno;
        }
    }

    static int errno(MemorySegment captureState) {
        return (int) ERRNO.get(captureState, 0L);
    }

    static StructLayout captureLayout() {
        return CAPTURE;
    }

    static final ValueLayout.OfLong LONG = JAVA_LONG;
}
