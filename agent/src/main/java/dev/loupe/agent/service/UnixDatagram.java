package dev.loupe.agent.service;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * Sends one datagram to an {@code AF_UNIX} socket: the package's only FFM code ({@code socket},
 * {@code sendto}, {@code close}, {@code strerror} from libc). The JDK's {@code DatagramChannel} has no
 * Unix-domain datagrams, and {@code sd_notify} needs nothing more than this.
 */
final class UnixDatagram {
    private static final int AF_UNIX = 1;
    private static final int SOCK_DGRAM = 2;
    private static final int SOCK_CLOEXEC = 0x80000; // 02000000, x86-64 and arm64
    private static final int MSG_NOSIGNAL = 0x4000;
    /** {@code struct sockaddr_un}: {@code sa_family_t sun_family; char sun_path[108];}. */
    static final int SUN_PATH_OFFSET = 2;
    static final int SUN_PATH_SIZE = 108;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle SOCKET = downcall("socket",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT), true);
    private static final MethodHandle SENDTO = downcall("sendto",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT), true);
    private static final MethodHandle CLOSE = downcall("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT), false);
    private static final MethodHandle STRERROR = downcall("strerror", FunctionDescriptor.of(ADDRESS, JAVA_INT), false);

    private UnixDatagram() {}

    private static MethodHandle downcall(String name, FunctionDescriptor fd, boolean errno) {
        MemorySegment fn = LINKER.defaultLookup().findOrThrow(name);
        return errno ? LINKER.downcallHandle(fn, fd, Linker.Option.captureCallState("errno"))
                : LINKER.downcallHandle(fn, fd);
    }

    /**
     * Sends {@code message} as one datagram from a fresh socket to {@code address} (the bytes of
     * {@code sun_path}, exactly as long as the address is: an abstract name starts with a NUL and has no
     * terminator; a path ends with its NUL). Throws with the errno text on failure.
     */
    static void send(byte[] address, byte[] message) throws IOException {
        if (address.length == 0 || address.length > SUN_PATH_SIZE) {
            throw new IllegalArgumentException("sun_path holds 1.." + SUN_PATH_SIZE + " bytes, not " + address.length);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            int fd = (int) SOCKET.invokeExact(state, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                throw failure("socket(AF_UNIX, SOCK_DGRAM)", state);
            }
            try {
                MemorySegment sockaddr = arena.allocate(SUN_PATH_OFFSET + SUN_PATH_SIZE, 2); // zeroed
                sockaddr.set(JAVA_SHORT, 0, (short) AF_UNIX);
                MemorySegment.copy(address, 0, sockaddr, JAVA_BYTE, SUN_PATH_OFFSET, address.length);
                MemorySegment buf = arena.allocate(Math.max(1, message.length));
                MemorySegment.copy(message, 0, buf, JAVA_BYTE, 0, message.length);
                long sent = (long) SENDTO.invokeExact(state, fd, buf, (long) message.length, MSG_NOSIGNAL, sockaddr,
                        SUN_PATH_OFFSET + address.length);
                if (sent < 0) {
                    throw failure("sendto(" + printable(address) + ")", state);
                }
                if (sent != message.length) { // a datagram goes whole or not at all
                    throw new IOException("sendto(" + printable(address) + ") sent " + sent + " of " + message.length + " bytes");
                }
            } finally {
                int unused = (int) CLOSE.invokeExact(fd); // nothing to flush: the datagram is sent or not
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("libc downcall failed", t);
        }
    }

    private static IOException failure(String call, MemorySegment state) throws Throwable {
        int errno = (int) ERRNO.get(state, 0L);
        MemorySegment text = (MemorySegment) STRERROR.invokeExact(errno);
        return new IOException(call + " failed: " + text.reinterpret(256).getString(0) + " (errno " + errno + ")");
    }

    /** The address as {@code NOTIFY_SOCKET} writes it: a leading NUL shown as '@', the terminator dropped. */
    static String printable(byte[] address) {
        int end = address[address.length - 1] == 0 && address[0] != 0 ? address.length - 1 : address.length;
        String s = new String(address, 0, end, StandardCharsets.UTF_8);
        return address[0] == 0 ? "@" + s.substring(1) : s;
    }
}
