package dev.loupe.agent.host;

import dev.loupe.unwinder.proc.ProcStatus;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * PID namespaces read from a {@code /proc}. The kernel's BPF helpers report pids of the initial namespace;
 * inside a container (without {@code hostPID}) the agent's own namespace is another one, and
 * {@code /proc/1} is the container's init, so comparing with pid 1 says nothing: the initial namespace is
 * recognised by its fixed inode, {@link #INITIAL_PID_NAMESPACE} ({@code PROC_PID_INIT_INO}). A process's
 * {@code NSpid:} status line lists its pid in each namespace from this {@code /proc}'s down to its own.
 */
public final class PidNamespaces {
    /** The inode of the initial PID namespace, fixed by the kernel ({@code PROC_PID_INIT_INO}, 0xEFFFFFFC). */
    public static final long INITIAL_PID_NAMESPACE = 0xEFFFFFFCL;
    private static final Pattern LINK = Pattern.compile("pid:\\[(\\d+)]");

    private final Path procRoot;

    public PidNamespaces(Path procRoot) {
        this.procRoot = procRoot;
    }

    public static PidNamespaces system() {
        return new PidNamespaces(Path.of("/proc"));
    }

    /** Whether this process runs in the initial PID namespace (its pids are the ones BPF reports). */
    public boolean selfInInitialNamespace() throws IOException {
        return namespaceOf("self") == INITIAL_PID_NAMESPACE;
    }

    /** The inode of the PID namespace of {@code pid} ("self" for this process), from {@code ns/pid}. */
    public long namespaceOf(String pid) throws IOException {
        return parseNamespaceLink(Files.readSymbolicLink(procRoot.resolve(pid).resolve("ns").resolve("pid")).toString());
    }

    /**
     * The pids of {@code pid} in each namespace from this {@code /proc}'s (first, which is {@code pid}
     * itself) down to its own (last); empty on kernels without {@code NSpid} (before 4.1).
     */
    public int[] nsPids(int pid) throws IOException {
        return ProcStatus.read(procRoot.resolve(Integer.toString(pid))).nsPids();
    }

    /** The pid that process {@code pid} (a pid of this {@code /proc}) has in its own namespace. */
    public OptionalInt pidInOwnNamespace(int pid) throws IOException {
        int[] p = nsPids(pid);
        return p.length == 0 ? OptionalInt.empty() : OptionalInt.of(p[p.length - 1]);
    }

    /**
     * The pid in this {@code /proc} of the process that is {@code nsPid} in the namespace {@code namespace}
     * (an inode from {@link #namespaceOf}): a scan of every process, for the rare lookup (a pid a user
     * copied from inside a container). Processes that exit meanwhile or whose namespace cannot be read are
     * passed over.
     */
    public OptionalInt pidFromNamespace(long namespace, int nsPid) throws IOException {
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(procRoot, p -> isNumber(p.getFileName().toString()))) {
            for (Path dir : dirs) {
                int pid = Integer.parseInt(dir.getFileName().toString());
                try {
                    int[] p = nsPids(pid);
                    if (p.length > 0 && p[p.length - 1] == nsPid && namespaceOf(Integer.toString(pid)) == namespace) {
                        return OptionalInt.of(pid);
                    }
                } catch (IOException passedOver) {
                    // exited meanwhile, or its namespace link is not ours to read (EACCES)
                }
            }
        }
        return OptionalInt.empty();
    }

    /** The inode in an {@code ns/pid} link's text, {@code pid:[4026531836]}. */
    static long parseNamespaceLink(String link) {
        Matcher m = LINK.matcher(link);
        if (!m.matches()) {
            throw new IllegalArgumentException("not a PID namespace link: " + link);
        }
        return Long.parseLong(m.group(1));
    }

    private static boolean isNumber(String s) {
        return !s.isEmpty() && s.chars().allMatch(c -> c >= '0' && c <= '9');
    }
}
