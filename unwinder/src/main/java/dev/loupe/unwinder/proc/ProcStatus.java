package dev.loupe.unwinder.proc;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * The lines of a {@code /proc/PID/status} that Loupe uses: the uids and gids ({@code Uid:}, {@code Gid:}: real,
 * effective, saved set, filesystem), the process's pid in each PID namespace from the reading {@code /proc}'s down
 * to its own ({@code NSpid:}, kernel 4.1 and later) and the signals it catches ({@code SigCgt:}). A line that is
 * absent is empty here; a line that is present but not numbers is refused.
 */
public final class ProcStatus {
    private static final int[] NONE = new int[0];

    private final int[] uids;
    private final int[] gids;
    private final int[] nsPids;
    private final Long sigCgt;

    private ProcStatus(int[] uids, int[] gids, int[] nsPids, Long sigCgt) {
        this.uids = uids;
        this.gids = gids;
        this.nsPids = nsPids;
        this.sigCgt = sigCgt;
    }

    /** Reads {@code procDir/status} ({@code procDir}: {@code /proc/self}, {@code /proc/PID}). */
    public static ProcStatus read(Path procDir) throws IOException {
        return parse(ProcMaps.readText(procDir.resolve("status")));
    }

    /** Parses a status text. IllegalArgumentException: a Uid, Gid, NSpid or SigCgt line that is not what the kernel writes. */
    public static ProcStatus parse(String status) {
        int[] uids = NONE;
        int[] gids = NONE;
        int[] nsPids = NONE;
        Long sigCgt = null;
        int pos = 0;
        while (pos < status.length()) {
            int nl = status.indexOf('\n', pos);
            int end = nl < 0 ? status.length() : nl;
            int colon = status.indexOf(':', pos);
            if (colon > pos && colon < end) {
                String value = status.substring(colon + 1, end);
                switch (status.substring(pos, colon)) {
                    case "Uid" -> uids = numbers("Uid", value);
                    case "Gid" -> gids = numbers("Gid", value);
                    case "NSpid" -> nsPids = numbers("NSpid", value);
                    case "SigCgt" -> sigCgt = parseMask(value);
                    default -> { }
                }
            }
            pos = end + 1;
        }
        return new ProcStatus(uids, gids, nsPids, sigCgt);
    }

    /** Real, effective, saved set and filesystem uid; empty without a {@code Uid:} line. */
    public int[] uids() {
        return uids.clone();
    }

    /** Real, effective, saved set and filesystem gid; empty without a {@code Gid:} line. */
    public int[] gids() {
        return gids.clone();
    }

    /** The effective uid. IllegalStateException without a {@code Uid:} line (every kernel writes one). */
    public int euid() {
        return second(uids, "Uid");
    }

    /** The effective gid. IllegalStateException without a {@code Gid:} line (every kernel writes one). */
    public int egid() {
        return second(gids, "Gid");
    }

    /**
     * The process's pids from the reading {@code /proc}'s namespace (first: the pid there) down to its own (last);
     * empty on kernels without {@code NSpid} (before 4.1).
     */
    public int[] nsPids() {
        return nsPids.clone();
    }

    /**
     * The pid the process has in its own PID namespace (the last {@code NSpid} field: the number in the names of
     * its perf map and attach socket); {@code pid}, its pid in the reading {@code /proc}, without an NSpid line.
     */
    public int nsPid(int pid) {
        return nsPids.length == 0 ? pid : nsPids[nsPids.length - 1];
    }

    /**
     * The caught-signals mask: bit {@code n - 1} is signal {@code n} (SIGQUIT, 3, is bit 2: 0x4). IllegalStateException
     * without a {@code SigCgt:} line (every kernel writes one).
     */
    public long sigCgt() {
        if (sigCgt == null) {
            throw new IllegalStateException("status has no SigCgt line");
        }
        return sigCgt;
    }

    /** Whether the process has a handler for signal {@code signal} (1..64). */
    public boolean catches(int signal) {
        if (signal < 1 || signal > 64) {
            throw new IllegalArgumentException("no signal " + signal);
        }
        return (sigCgt() >>> (signal - 1) & 1) != 0;
    }

    /** A signal mask as status prints it: 16 hex digits (64 signals). */
    static long parseMask(String hex) {
        String h = hex.strip();
        if (h.isEmpty() || h.length() > 16) {
            throw new IllegalArgumentException("not a signal mask: '" + hex + "'");
        }
        return Long.parseUnsignedLong(h, 16);
    }

    private static int[] numbers(String key, String value) {
        String v = value.strip();
        if (v.isEmpty()) {
            return NONE;
        }
        try {
            return Arrays.stream(v.split("[\\t ]+")).mapToInt(Integer::parseUnsignedInt).toArray();
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a " + key + " line: '" + value + "'", e);
        }
    }

    private static int second(int[] ids, String key) {
        if (ids.length < 2) {
            throw new IllegalStateException("status has no " + key + " line");
        }
        return ids[1];
    }
}
