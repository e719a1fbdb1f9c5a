package dev.loupe.agent.service;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.function.LongSupplier;

/**
 * systemd's {@code sd_notify} protocol, spoken by the agent itself (no libsystemd): each call sends one
 * datagram of {@code KEY=value} lines to {@code $NOTIFY_SOCKET}, a filesystem path ({@code /run/...}) or
 * an abstract socket name ({@code @...}). Without {@code NOTIFY_SOCKET} (not started by systemd, or a
 * unit without {@code Type=notify}/{@code NotifyAccess}) every call is a no-op that returns false.
 *
 * <p>Reload: {@link #reloading()} sends {@code RELOADING=1} with {@code MONOTONIC_USEC} (systemd 253+
 * wants both for {@code Type=notify-reload}; older versions ignore the unknown key); send {@link #ready()}
 * again when the reload is done.
 */
public final class SdNotify {
    private final byte[] address; // sun_path bytes; null when disabled
    private final Optional<Duration> watchdogInterval;
    private final LongSupplier monotonicNanos;

    private SdNotify(byte[] address, Optional<Duration> watchdogInterval, LongSupplier monotonicNanos) {
        this.address = address;
        this.watchdogInterval = watchdogInterval;
        this.monotonicNanos = monotonicNanos;
    }

    /**
     * From this process's environment. {@code System.nanoTime} is HotSpot's {@code CLOCK_MONOTONIC} on
     * Linux, the clock {@code MONOTONIC_USEC} is read on.
     *
     * @throws IllegalArgumentException when {@code NOTIFY_SOCKET} is neither a path nor an abstract name, or
     *         the watchdog variables are malformed (systemd never sets them so)
     */
    /** Sends nothing: not under a notify service. */
    public static SdNotify disabled() {
        return from(Map.of(), ProcessHandle.current().pid(), System::nanoTime);
    }

    public static SdNotify fromEnvironment() {
        return from(System.getenv(), ProcessHandle.current().pid(), System::nanoTime);
    }

    static SdNotify from(Map<String, String> env, long ownPid, LongSupplier monotonicNanos) {
        String socket = env.get("NOTIFY_SOCKET");
        byte[] address = socket == null || socket.isEmpty() ? null : socketAddress(socket);
        return new SdNotify(address, watchdogInterval(env, ownPid), monotonicNanos);
    }

    /**
     * {@code sun_path} for a {@code NOTIFY_SOCKET} value: a path with its NUL terminator, or for
     * {@code @name} a NUL followed by the name and nothing after it (an abstract address is exactly as long
     * as its name: one more byte would name another socket).
     */
    static byte[] socketAddress(String notifySocket) {
        byte[] text = notifySocket.getBytes(StandardCharsets.UTF_8);
        if ((text[0] != '/' && text[0] != '@') || text.length < 2) {
            throw new IllegalArgumentException("NOTIFY_SOCKET=" + notifySocket
                    + " is neither an absolute path nor an abstract socket name (@name); Loupe speaks sd_notify over AF_UNIX only");
        }
        boolean path = text[0] == '/';
        byte[] address = new byte[path ? text.length + 1 : text.length];
        System.arraycopy(text, path ? 0 : 1, address, path ? 0 : 1, path ? text.length : text.length - 1);
        if (address.length > UnixDatagram.SUN_PATH_SIZE) {
            throw new IllegalArgumentException("NOTIFY_SOCKET=" + notifySocket + " is longer than a socket address ("
                    + (UnixDatagram.SUN_PATH_SIZE - 1) + " bytes)");
        }
        return address;
    }

    /**
     * The watchdog timeout systemd set for this process: {@code WATCHDOG_USEC} if set and, when
     * {@code WATCHDOG_PID} is set, only if it is {@code ownPid} (the variables are inherited by children,
     * which must not ping for their parent). Ping at half of it.
     */
    static Optional<Duration> watchdogInterval(Map<String, String> env, long ownPid) {
        String usec = env.get("WATCHDOG_USEC");
        if (usec == null || usec.isEmpty()) {
            return Optional.empty();
        }
        long micros = positive("WATCHDOG_USEC", usec);
        String pid = env.get("WATCHDOG_PID");
        if (pid != null && !pid.isEmpty() && positive("WATCHDOG_PID", pid) != ownPid) {
            return Optional.empty();
        }
        return Optional.of(Duration.ofNanos(Math.multiplyExact(micros, 1_000L)));
    }

    private static long positive(String name, String value) {
        try {
            long v = Long.parseLong(value);
            if (v > 0) {
                return v;
            }
        } catch (NumberFormatException | ArithmeticException e) {
            // reported below
        }
        throw new IllegalArgumentException(name + "=" + value + " is not a positive integer");
    }

    /** True when {@code NOTIFY_SOCKET} is set: calls send datagrams. */
    public boolean enabled() {
        return address != null;
    }

    /** The watchdog timeout meant for this process, if systemd set one. */
    public Optional<Duration> watchdogInterval() {
        return watchdogInterval;
    }

    /** {@code READY=1}: start-up finished (or a reload did). */
    public boolean ready() throws IOException {
        return send("READY=1");
    }

    /** {@code STATUS=text}, one line: line breaks would end the assignment, so they become spaces. */
    public boolean status(String text) throws IOException {
        return send("STATUS=" + text.replace('\r', ' ').replace('\n', ' '));
    }

    /** {@code WATCHDOG=1}: the service is alive. */
    public boolean watchdog() throws IOException {
        return send("WATCHDOG=1");
    }

    /** {@code STOPPING=1}: shutting down. */
    public boolean stopping() throws IOException {
        return send("STOPPING=1");
    }

    /** {@code RELOADING=1} and {@code MONOTONIC_USEC} (CLOCK_MONOTONIC in µs, when the reload began). */
    public boolean reloading() throws IOException {
        return send("RELOADING=1\nMONOTONIC_USEC=" + monotonicNanos.getAsLong() / 1_000L);
    }

    /** Sends {@code state} as one datagram; false without a socket. */
    boolean send(String state) throws IOException {
        if (address == null) {
            return false;
        }
        UnixDatagram.send(address, state.getBytes(StandardCharsets.UTF_8));
        return true;
    }
}
