package dev.loupe.agent.jvm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.Optional;
import java.util.function.BooleanSupplier;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Sends SIGQUIT, the signal that makes a HotSpot JVM look for its attach trigger file: the package's only FFM code
 * (libc's {@code pidfd_open}, {@code pidfd_send_signal}, {@code kill}, {@code close}, {@code strerror}). The process
 * is pinned with a pidfd first and the caller's check (still the same process, still catching SIGQUIT) runs after,
 * so a pid that is reused meanwhile is never signalled: the pidfd names the old process, and the signal fails.
 * Without {@code pidfd_open} (glibc before 2.36, kernels before 5.3) it checks and then calls {@code kill(2)}, with
 * a window of microseconds between the two.
 */
final class Sigquit {
    static final int SIGQUIT = 3;
    private static final int ESRCH = 3;
    private static final int ENOSYS = 38;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Optional<MethodHandle> PIDFD_OPEN = downcall("pidfd_open", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final Optional<MethodHandle> PIDFD_SEND_SIGNAL = downcall("pidfd_send_signal",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle KILL = downcall("kill", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT)).orElseThrow();
    private static final MethodHandle CLOSE = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("close"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle STRERROR = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("strerror"),
            FunctionDescriptor.of(ADDRESS, JAVA_INT));

    /** What became of the signal. */
    enum Outcome {
        SENT,
        /** The check said no: nothing was sent. */
        REFUSED,
        /** The process is gone. */
        GONE
    }

    private Sigquit() {}

    private static Optional<MethodHandle> downcall(String name, FunctionDescriptor fd) {
        return LINKER.defaultLookup().find(name)
                .map(fn -> LINKER.downcallHandle(fn, fd, Linker.Option.captureCallState("errno")));
    }

    /** Sends SIGQUIT to {@code pid} if {@code stillSafe}, asked once the process is pinned, says yes. */
    static Outcome send(int pid, BooleanSupplier stillSafe) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            if (PIDFD_OPEN.isPresent() && PIDFD_SEND_SIGNAL.isPresent()) {
                int fd = (int) PIDFD_OPEN.get().invokeExact(state, pid, 0);
                if (fd >= 0) {
                    try {
                        if (!stillSafe.getAsBoolean()) {
                            return Outcome.REFUSED;
                        }
                        int r = (int) PIDFD_SEND_SIGNAL.get().invokeExact(state, fd, SIGQUIT, MemorySegment.NULL, 0);
                        return r == 0 ? Outcome.SENT : failure("pidfd_send_signal(" + pid + ", SIGQUIT)", state);
                    } finally {
                        int unused = (int) CLOSE.invokeExact(fd);
                    }
                }
                if (errno(state) != ENOSYS) {
                    return failure("pidfd_open(" + pid + ")", state);
                }
            }
            if (!stillSafe.getAsBoolean()) {
                return Outcome.REFUSED;
            }
            int r = (int) KILL.invokeExact(state, pid, SIGQUIT);
            return r == 0 ? Outcome.SENT : failure("kill(" + pid + ", SIGQUIT)", state);
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("libc downcall failed", t);
        }
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    /** GONE for ESRCH (the process exited), otherwise an exception with the errno text. */
    private static Outcome failure(String call, MemorySegment state) throws Throwable {
        int errno = errno(state);
        if (errno == ESRCH) {
            return Outcome.GONE;
        }
        MemorySegment text = (MemorySegment) STRERROR.invokeExact(errno);
        throw new IOException(call + " failed: " + text.reinterpret(256).getString(0) + " (errno " + errno + ")");
    }
}
