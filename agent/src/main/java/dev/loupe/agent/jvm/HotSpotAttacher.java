package dev.loupe.agent.jvm;

import dev.loupe.unwinder.proc.ProcStatus;
import dev.loupe.unwinder.proc.ProcessRegistry;

import java.io.IOException;
import java.io.InputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;

/**
 * Runs {@code Compiler.perfmap} in a HotSpot JVM through its attach mechanism, as seen from another PID and mount
 * namespace. The JVM's listener is a Unix socket {@code /tmp/.java_pid<nspid>} in its own file system
 * ({@code /proc/<pid>/root/tmp/...} from here; HotSpot's temp directory is always {@code /tmp}, not
 * {@code java.io.tmpdir}), owned by the JVM's effective uid. A JVM opens it at start only with {@code -Xrs}; otherwise
 * on demand: a trigger file {@code .attach_pid<nspid>} in its working directory or {@code /tmp}, owned by its uid or
 * root, and a SIGQUIT, which its signal dispatcher answers by starting the listener instead of printing a thread
 * dump. SIGQUIT is sent only when the socket is missing and the process catches it ({@code SigCgt}): a JVM with
 * {@code -Xrs}, or any other process, would die of it. HotSpot answers a client whose effective uid is root or whose
 * uid and gid are its own ({@code SO_PEERCRED}). The JVM writes {@code /tmp/perf-<nspid>.map} in its file system.
 */
final class HotSpotAttacher {
    private static final int MAX_REPLY_BYTES = 1 << 20;
    private static final Duration POLL = Duration.ofMillis(20);

    /** What an attach came to. */
    sealed interface Result {
        /** The map is written: where (as seen from here) and how many lines it has; {@code signalled}: SIGQUIT was sent. */
        record Written(Path map, long lines, boolean signalled) implements Result {}

        /** Never to be tried again for this process, and why (it does not catch SIGQUIT, no listener came up...). */
        record Refused(String reason) implements Result {}

        /** This time it did not work (it may next time), and why. */
        record Failed(String reason) implements Result {}

        /** The process exited, or its pid names another one now. */
        record Gone() implements Result {}
    }

    /** Sends SIGQUIT after the check, or not (a test's stand-in records instead). */
    interface Signaller {
        Sigquit.Outcome sigquit(int pid, java.util.function.BooleanSupplier stillSafe) throws IOException;
    }

    private final ProcessRegistry registry;
    private final Path procRoot;
    private final Duration listenerWait;
    private final Duration replyTimeout;
    private final Signaller signaller;

    /**
     * @param listenerWait how long to wait for the socket after SIGQUIT
     * @param replyTimeout how long {@code Compiler.perfmap} may take (it holds the code cache lock while it writes)
     */
    HotSpotAttacher(ProcessRegistry registry, Duration listenerWait, Duration replyTimeout, Signaller signaller) {
        this.registry = registry;
        this.procRoot = registry.procRoot();
        this.listenerWait = listenerWait;
        this.replyTimeout = replyTimeout;
        this.signaller = signaller;
    }

    static HotSpotAttacher system(ProcessRegistry registry) {
        return new HotSpotAttacher(registry, Duration.ofSeconds(5), Duration.ofSeconds(30), Sigquit::send);
    }

    /** {@code /proc/<pid>/root/tmp}: the JVM's {@code /tmp}. */
    Path tmp(JvmTarget t) {
        return procRoot.resolve(Integer.toString(t.pid())).resolve("root").resolve("tmp");
    }

    Path socket(JvmTarget t) {
        return tmp(t).resolve(".java_pid" + t.nsPid());
    }

    /** Where the JVM writes its map ({@code /tmp/perf-<nspid>.map} in its file system), as seen from here. */
    Path perfMap(JvmTarget t) {
        return tmp(t).resolve("perf-" + t.nsPid() + ".map");
    }

    /** Makes the JVM write its perf map, starting its attach listener first if it has none. */
    Result writePerfMap(JvmTarget t) {
        boolean signalled = false;
        try {
            Optional<String> socketProblem = socketProblem(t);
            if (socketProblem.isPresent()) {
                return new Result.Refused(socketProblem.get());
            }
            if (!Files.exists(socket(t), LinkOption.NOFOLLOW_LINKS)) {
                Result started = startListener(t);
                if (started != null) {
                    return started;
                }
                signalled = true;
            }
            Path map = perfMap(t);
            FileTime before = modified(map);
            AttachProtocol.Reply reply = exchange(socket(t), AttachProtocol.perfMapRequest(), replyTimeout);
            if (reply.result() != 0 || reply.output().contains("Exception")) {
                String why = reply.firstLine().isEmpty() ? "result " + reply.result() : reply.firstLine();
                if (why.contains("Unknown diagnostic command")) {
                    return new Result.Refused("this JVM has no Compiler.perfmap (" + why + ")");
                }
                return new Result.Failed("Compiler.perfmap failed: " + why);
            }
            FileTime after = modified(map);
            if (after == null || before != null && after.compareTo(before) <= 0 && !isRecent(after)) {
                return new Result.Failed("Compiler.perfmap answered but " + map + " was not written"
                        + (reply.firstLine().isEmpty() ? "" : ": " + reply.firstLine()));
            }
            return new Result.Written(map, countLines(map), signalled);
        } catch (IOException | RuntimeException e) {
            if (!stillTheSame(t)) {
                return new Result.Gone();
            }
            return new Result.Failed(e.getMessage() == null ? e.toString() : e.getMessage());
        }
    }

    /** Why the socket that is there must not be used (another user's file in a shared /tmp), if so. */
    private Optional<String> socketProblem(JvmTarget t) throws IOException {
        Path s = socket(t);
        if (!Files.exists(s, LinkOption.NOFOLLOW_LINKS)) {
            return Optional.empty();
        }
        int owner = (Integer) Files.getAttribute(s, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        int mode = (Integer) Files.getAttribute(s, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        if ((mode & 0170000) != 0140000) {
            return Optional.of(s + " is not a socket");
        }
        if (owner != t.euid()) {
            return Optional.of(s + " belongs to uid " + Integer.toUnsignedString(owner) + ", not the JVM's uid "
                    + Integer.toUnsignedString(t.euid()) + ": not connecting to it");
        }
        return Optional.empty();
    }

    /**
     * Starts the JVM's attach listener: trigger file, SIGQUIT (only to a process that catches it), then waits for
     * the socket. Null when it came up; otherwise what to report.
     */
    private Result startListener(JvmTarget t) throws IOException {
        ProcStatus status = currentStatus(t);
        if (status == null) {
            return new Result.Gone();
        }
        if (!status.catches(Sigquit.SIGQUIT)) {
            return new Result.Refused("it does not catch SIGQUIT (started with -Xrs?) and has no attach listener: "
                    + "not signalled");
        }
        Trigger trigger = createTrigger(t);
        try {
            Sigquit.Outcome sent = signaller.sigquit(t.pid(), () -> {
                ProcStatus now = currentStatus(t);
                return now != null && now.catches(Sigquit.SIGQUIT);
            });
            switch (sent) {
                case GONE -> {
                    return new Result.Gone();
                }
                case REFUSED -> {
                    return stillTheSame(t) ? new Result.Refused("it stopped catching SIGQUIT: not signalled") : new Result.Gone();
                }
                case SENT -> { }
            }
            long deadline = System.nanoTime() + listenerWait.toNanos();
            while (!Files.exists(socket(t), LinkOption.NOFOLLOW_LINKS)) {
                if (System.nanoTime() - deadline > 0) {
                    // Another SIGQUIT would only print another thread dump into the application's output.
                    return stillTheSame(t) ? new Result.Refused("no attach listener within " + listenerWait.toSeconds()
                            + " s of SIGQUIT (" + trigger.path() + " not honoured?)") : new Result.Gone();
                }
                try {
                    Thread.sleep(POLL);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return new Result.Failed("interrupted while waiting for the attach listener");
                }
            }
            return null;
        } finally {
            if (trigger.created()) {
                Files.deleteIfExists(trigger.path());
            }
        }
    }

    /** The trigger file used, and whether it is ours to delete afterwards. */
    private record Trigger(Path path, boolean created) {}

    /**
     * Creates {@code .attach_pid<nspid>} in the JVM's {@code /tmp} (else its working directory), owned by the JVM's
     * uid and gid, exclusively: a file or symlink already there is never followed or written. One already there
     * that HotSpot would honour (a regular file of the JVM's uid or root: another client is attaching) is used
     * as it is and left in place.
     */
    private Trigger createTrigger(JvmTarget t) throws IOException {
        String name = ".attach_pid" + t.nsPid();
        IOException first = null;
        for (Path dir : new Path[] {tmp(t), procRoot.resolve(t.pid() + "/cwd")}) {
            Path trigger = dir.resolve(name);
            try {
                Files.createFile(trigger, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                chown(trigger, t.euid(), t.egid());
                return new Trigger(trigger, true);
            } catch (FileAlreadyExistsException e) {
                if (Files.isRegularFile(trigger, LinkOption.NOFOLLOW_LINKS)) {
                    int owner = (Integer) Files.getAttribute(trigger, "unix:uid", LinkOption.NOFOLLOW_LINKS);
                    if (owner == t.euid() || owner == 0) {
                        return new Trigger(trigger, false);
                    }
                }
                first = first == null ? new IOException(trigger + " exists and HotSpot would not honour it") : first;
            } catch (IOException e) {
                first = first == null ? e : first;
            }
        }
        throw new IOException("cannot create the attach trigger file " + name + ": " + first.getMessage(), first);
    }

    /** lchown (never through a symlink). Only root may give a file away; a non-root agent owns it, as HotSpot wants. */
    private static void chown(Path p, int uid, int gid) {
        try {
            Files.setAttribute(p, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
            Files.setAttribute(p, "unix:gid", gid, LinkOption.NOFOLLOW_LINKS);
        } catch (IOException notRoot) {
            // JvmInspector lets a non-root agent attach only to JVMs of its own uid, whose files it owns already.
        }
    }

    /** The process's status now, or null when the pid no longer names the process {@code t} was. */
    private ProcStatus currentStatus(JvmTarget t) {
        try {
            if (registry.startTicks(t.pid()) != t.startTicks()) {
                return null;
            }
            ProcStatus s = ProcStatus.read(procRoot.resolve(Integer.toString(t.pid())));
            return registry.startTicks(t.pid()) == t.startTicks() ? s : null;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private boolean stillTheSame(JvmTarget t) {
        try {
            return registry.startTicks(t.pid()) == t.startTicks();
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * One request and its reply over a fresh connection, within {@code timeout}: the JVM answers once the operation
     * is done and then closes.
     */
    static AttachProtocol.Reply exchange(Path socket, byte[] request, Duration timeout) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX); Selector selector = Selector.open()) {
            ch.configureBlocking(false);
            SelectionKey key = ch.register(selector, 0);
            if (!ch.connect(UnixDomainSocketAddress.of(socket))) {
                do { // only while the listener's backlog is full
                    await(selector, key, SelectionKey.OP_CONNECT, deadline, "connecting to " + socket);
                } while (!ch.finishConnect());
            }
            ByteBuffer out = ByteBuffer.wrap(request);
            while (out.hasRemaining()) {
                if (ch.write(out) == 0) {
                    await(selector, key, SelectionKey.OP_WRITE, deadline, "sending the request");
                }
            }
            byte[] reply = new byte[4096];
            int length = 0;
            ByteBuffer in = ByteBuffer.allocate(8192);
            while (true) {
                in.clear();
                int n = ch.read(in);
                if (n < 0) {
                    break;
                }
                if (n == 0) {
                    await(selector, key, SelectionKey.OP_READ, deadline, "waiting for the reply");
                    continue;
                }
                if (length + n > MAX_REPLY_BYTES) {
                    throw new IOException("the reply is longer than " + MAX_REPLY_BYTES + " bytes");
                }
                if (length + n > reply.length) {
                    reply = Arrays.copyOf(reply, Math.max(reply.length * 2, length + n));
                }
                in.flip();
                in.get(reply, length, n);
                length += n;
            }
            return AttachProtocol.parseReply(reply, length);
        }
    }

    private static void await(Selector selector, SelectionKey key, int op, long deadline, String what) throws IOException {
        key.interestOps(op);
        long left = deadline - System.nanoTime();
        if (left <= 0 || selector.select(Math.max(1, left / 1_000_000)) == 0 && deadline - System.nanoTime() <= 0) {
            throw new IOException("timed out " + what);
        }
        selector.selectedKeys().clear();
    }

    private static FileTime modified(Path p) {
        try {
            return Files.getLastModifiedTime(p);
        } catch (IOException e) {
            return null;
        }
    }

    private static boolean isRecent(FileTime t) {
        return System.currentTimeMillis() - t.toMillis() < 2_000;
    }

    /** The map's lines, counted as they stream by (a map can be tens of MB; nothing of it is kept). */
    static long countLines(Path map) throws IOException {
        long lines = 0;
        byte[] buf = new byte[64 << 10];
        boolean open = false;
        try (InputStream in = Files.newInputStream(map)) {
            int n;
            while ((n = in.read(buf)) > 0) {
                for (int i = 0; i < n; i++) {
                    if (buf[i] == '\n') {
                        lines++;
                        open = false;
                    } else {
                        open = true;
                    }
                }
            }
        } catch (NoSuchFileException e) {
            return 0;
        }
        return open ? lines + 1 : lines;
    }
}
