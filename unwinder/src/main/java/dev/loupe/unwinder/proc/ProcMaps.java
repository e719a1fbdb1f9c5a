package dev.loupe.unwinder.proc;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Parser for /proc/PID/maps. Malformed lines are skipped, not fatal. */
public final class ProcMaps {
    private static final String DELETED = " (deleted)";

    private ProcMaps() {}

    public static List<MapEntry> read(Path procRoot, int pid) throws IOException {
        return parse(Files.readString(procRoot.resolve(Integer.toString(pid)).resolve("maps")));
    }

    public static List<MapEntry> parse(String text) {
        List<MapEntry> out = new ArrayList<>();
        int pos = 0;
        while (pos < text.length()) {
            int nl = text.indexOf('\n', pos);
            if (nl < 0) {
                nl = text.length();
            }
            MapEntry e = parseLine(text, pos, nl);
            if (e != null) {
                out.add(e);
            }
            pos = nl + 1;
        }
        return out;
    }

    /** start-end perms offset major:minor inode [path] — the path may contain spaces. */
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
                    sp = to; // anonymous mapping: no path after the inode
                }
                cut[f] = sp;
                p = sp + 1;
            }
            String range = text.substring(from, cut[0]);
            int dash = range.indexOf('-');
            long start = Long.parseUnsignedLong(range.substring(0, dash), 16);
            long end = Long.parseUnsignedLong(range.substring(dash + 1), 16);
            String perms = text.substring(cut[0] + 1, cut[1]);
            long offset = Long.parseUnsignedLong(text.substring(cut[1] + 1, cut[2]), 16);
            String dev = text.substring(cut[2] + 1, cut[3]);
            int colon = dev.indexOf(':');
            int major = Integer.parseInt(dev.substring(0, colon), 16);
            int minor = Integer.parseInt(dev.substring(colon + 1), 16);
            long inode = Long.parseLong(text.substring(cut[3] + 1, cut[4]));
            String path = cut[4] >= to ? "" : text.substring(cut[4] + 1, to).strip();
            boolean deleted = path.endsWith(DELETED);
            if (deleted) {
                path = path.substring(0, path.length() - DELETED.length());
            }
            if (perms.length() != 4 || Long.compareUnsigned(end, start) <= 0) {
                return null;
            }
            return new MapEntry(start, end, perms, offset, major, minor, inode, path, deleted);
        } catch (RuntimeException e) {
            return null;
        }
    }
}
