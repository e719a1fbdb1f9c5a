package dev.loupe.unwinder.proc;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Parser for /proc/PID/maps. Malformed lines are skipped and counted, never fatal. */
public final class ProcMaps {
    private static final String DELETED = " (deleted)";

    /** Parsed entries in file order, and how many non-empty lines could not be parsed. */
    public record Parsed(List<MapEntry> entries, int malformedLines) {}

    private ProcMaps() {}

    /** Reads {@code procRoot/PID/maps}. */
    public static List<MapEntry> read(Path procRoot, int pid) throws IOException {
        return readCounted(procRoot, pid).entries();
    }

    /** As {@link #read}, with the count of malformed lines. */
    public static Parsed readCounted(Path procRoot, int pid) throws IOException {
        return parseCounted(readText(procRoot.resolve(Integer.toString(pid)).resolve("maps")));
    }

    public static List<MapEntry> parse(String text) {
        return parseCounted(text).entries();
    }

    public static Parsed parseCounted(String text) {
        List<MapEntry> out = new ArrayList<>();
        int bad = 0;
        int pos = 0;
        while (pos < text.length()) {
            int nl = text.indexOf('\n', pos);
            if (nl < 0) {
                nl = text.length();
            }
            if (nl > pos) {
                MapEntry e = parseLine(text, pos, nl);
                if (e != null) {
                    out.add(e);
                } else {
                    bad++;
                }
            }
            pos = nl + 1;
        }
        return new Parsed(out, bad);
    }

    /**
     * A /proc text file. Paths (and comm in stat) are arbitrary bytes: decode leniently (invalid UTF-8
     * becomes U+FFFD) rather than fail the whole file like {@link Files#readString} does.
     */
    public static String readText(Path file) throws IOException {
        if (file.getFileSystem() != java.nio.file.FileSystems.getDefault()) {
            return new String(Files.readAllBytes(file), StandardCharsets.UTF_8);
        }
        // A plain stream into a buffer the thread keeps: Files.readAllBytes costs 4x as much on a /proc file (its size
        // is 0, so it reads through a channel into growing buffers): 300 against 70 us a /proc/PID/cgroup here, paid
        // for each process of a churn.
        byte[] buf = READ_BUFFER.get();
        int n = 0;
        try (java.io.FileInputStream in = new java.io.FileInputStream(file.toFile())) {
            int r;
            while ((r = in.read(buf, n, buf.length - n)) > 0) {
                n += r;
                if (n == buf.length) {
                    buf = java.util.Arrays.copyOf(buf, buf.length * 2);
                    if (buf.length <= KEPT_READ_BUFFER_BYTES) {
                        READ_BUFFER.set(buf);
                    }
                }
            }
        } catch (java.io.FileNotFoundException e) {
            // What Files would throw (callers and logs tell a missing file from other failures by it).
            throw Files.exists(file) ? new java.nio.file.AccessDeniedException(file.toString())
                    : new java.nio.file.NoSuchFileException(file.toString());
        }
        return new String(buf, 0, n, StandardCharsets.UTF_8);
    }

    private static final ThreadLocal<byte[]> READ_BUFFER = ThreadLocal.withInitial(() -> new byte[16 << 10]);
    /** A larger buffer (a JVM's maps) is used for its read and dropped. */
    private static final int KEPT_READ_BUFFER_BYTES = 256 << 10;

    /**
     * {@code start-end perms offset major:minor inode [padding path]}; the path may contain spaces and
     * end in " (deleted)".
     */
    static MapEntry parseLine(String text, int from, int to) {
        try {
            int[] cut = new int[5];
            int p = from;
            for (int f = 0; f < 5; f++) {
                int sp = text.indexOf(' ', p);
                if (sp < 0 || sp > to) {
                    if (f < 4) {
                        return null;
                    }
                    sp = to; // no path and no trailing space after the inode
                }
                cut[f] = sp;
                p = sp + 1;
            }
            int dash = text.indexOf('-', from);
            if (dash < 0 || dash > cut[0]) {
                return null;
            }
            long start = Long.parseUnsignedLong(text, from, dash, 16);
            long end = Long.parseUnsignedLong(text, dash + 1, cut[0], 16);
            String perms = text.substring(cut[0] + 1, cut[1]);
            long offset = Long.parseUnsignedLong(text, cut[1] + 1, cut[2], 16);
            int colon = text.indexOf(':', cut[2] + 1);
            if (colon < 0 || colon > cut[3]) {
                return null;
            }
            int major = Integer.parseInt(text, cut[2] + 1, colon, 16);
            int minor = Integer.parseInt(text, colon + 1, cut[3], 16);
            long inode = Long.parseLong(text, cut[3] + 1, cut[4], 10);
            int ps = cut[4] + 1;
            while (ps < to && text.charAt(ps) == ' ') {
                ps++; // the kernel pads to a column; a path itself never starts with a space
            }
            String path = ps >= to ? "" : text.substring(ps, to);
            boolean deleted = path.endsWith(DELETED);
            if (deleted) {
                path = path.substring(0, path.length() - DELETED.length());
            }
            if (perms.length() != 4 || Long.compareUnsigned(end, start) <= 0 || inode < 0) {
                return null;
            }
            return new MapEntry(start, end, perms, offset, major, minor, inode, path, deleted);
        } catch (RuntimeException e) {
            return null; // NumberFormatException, IndexOutOfBounds: a malformed line
        }
    }
}
