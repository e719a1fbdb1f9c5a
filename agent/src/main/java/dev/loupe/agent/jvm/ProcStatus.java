package dev.loupe.agent.jvm;

import dev.loupe.agent.host.PidNamespaces;

/**
 * What the attach needs from a {@code /proc/PID/status} text: the effective uid and gid (HotSpot accepts a client
 * with its own or root's), the signals the process catches ({@code SigCgt}) and its pid in its own PID namespace
 * (the last {@code NSpid} field: the number in the names of its attach socket and perf map).
 *
 * @param nsPid  the pid in the process's own namespace; {@code pid} itself on kernels without {@code NSpid}
 * @param sigCgt the caught-signals mask: bit {@code n - 1} is signal {@code n} (SIGQUIT, 3, is bit 2: 0x4)
 */
record ProcStatus(int euid, int egid, long sigCgt, int nsPid) {
    /** Whether the process has a handler for signal {@code signal} (1..64). */
    boolean catches(int signal) {
        if (signal < 1 || signal > 64) {
            throw new IllegalArgumentException("no signal " + signal);
        }
        return (sigCgt >>> (signal - 1) & 1) != 0;
    }

    /** Parses a status text; {@code pid} stands in for the namespace pid when there is no {@code NSpid} line. */
    static ProcStatus parse(int pid, String status) {
        int[] ids = field(status, "Uid:");
        int[] gids = field(status, "Gid:");
        String cgt = value(status, "SigCgt:");
        if (ids.length < 2 || gids.length < 2 || cgt == null) {
            throw new IllegalArgumentException("status of " + pid + " has no Uid, Gid or SigCgt line");
        }
        int[] ns = PidNamespaces.parseNsPids(status);
        return new ProcStatus(ids[1], gids[1], parseMask(cgt), ns.length == 0 ? pid : ns[ns.length - 1]);
    }

    /** A signal mask as status prints it: 16 hex digits (64 signals). */
    static long parseMask(String hex) {
        String h = hex.strip();
        if (h.isEmpty() || h.length() > 16) {
            throw new IllegalArgumentException("not a signal mask: '" + hex + "'");
        }
        return Long.parseUnsignedLong(h, 16);
    }

    private static String value(String status, String name) {
        int at = status.startsWith(name) ? 0 : status.indexOf("\n" + name);
        if (at < 0) {
            return null;
        }
        int start = at == 0 ? name.length() : at + 1 + name.length();
        int end = status.indexOf('\n', start);
        return status.substring(start, end < 0 ? status.length() : end);
    }

    private static int[] field(String status, String name) {
        String v = value(status, name);
        if (v == null) {
            return new int[0];
        }
        String t = v.strip();
        return t.isEmpty() ? new int[0] : java.util.Arrays.stream(t.split("\\s+")).mapToInt(Integer::parseUnsignedInt).toArray();
    }
}
