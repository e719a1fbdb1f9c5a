package dev.loupe.unwinder.proc;

import dev.loupe.unwinder.fuzz.FuzzInput;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Fuzz target for the /proc readers: {@link ProcMaps} (maps: paths are any file name a user picks, and named
 * anonymous memory), {@link ProcStatus} (status: the Name line is the process's own comm) and
 * {@link ProcessRegistry#parseStartTicks} (stat: comm unescaped, with any ')' and spaces). The first byte picks
 * the reader and whether the rest is raw text or fields rendered as the kernel renders them, with the
 * user-controlled part (path, comm) from the input. Raw text may only give the errors the readers promise
 * (maps: none, a malformed line is counted; status: IllegalArgumentException; stat: IOException); rendered text
 * must read back as exactly the fields rendered.
 */
public final class ProcFuzzTarget {
    private static final String[] PERMS = {"r-xp", "r--p", "rw-p", "---p", "r-xs", "rwxp"};

    private ProcFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        int mode = in.u8() % 6;
        switch (mode) {
            case 0 -> rawMaps(new String(in.rest(), StandardCharsets.UTF_8));
            case 1 -> renderedMaps(in);
            case 2 -> rawStatus(new String(in.rest(), StandardCharsets.UTF_8));
            case 3 -> renderedStatus(in);
            case 4 -> rawStat(new String(in.rest(), StandardCharsets.UTF_8));
            default -> renderedStat(in);
        }
    }

    private static void rawMaps(String text) {
        ProcMaps.Parsed p = ProcMaps.parseCounted(text);
        long lines = Arrays.stream(text.split("\n", -1)).filter(l -> !l.isEmpty()).count();
        if (p.entries().size() + p.malformedLines() != lines) {
            throw new IllegalStateException(p.entries().size() + " entries and " + p.malformedLines() + " malformed of " + lines + " lines");
        }
        for (MapEntry e : p.entries()) {
            if (Long.compareUnsigned(e.end(), e.start()) <= 0 || e.perms().length() != 4 || e.inode() < 0 || e.path().indexOf('\n') >= 0) {
                throw new IllegalStateException("entry " + e);
            }
            e.executable();
            e.fileBacked();
            e.anonymousCode();
            e.mapFilesName();
        }
    }

    /** Lines as show_map_vma writes them: hex fields, the path padded to column 73, '\n' in it as \012. */
    private static void renderedMaps(FuzzInput in) {
        int n = in.intIn(1, 4);
        StringBuilder text = new StringBuilder();
        List<MapEntry> want = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            long start = in.i64() & ~0xfffL & 0x7fff_ffff_ffffL;
            long end = start + ((in.u16() + 1L) << 12);
            String perms = in.pick(PERMS);
            long offset = (in.i32() & 0xffffffffL) << 12;
            int major = in.u8();
            int minor = in.u8();
            long inode = in.i32() & 0x7fffffffL;
            int kind = in.u8() % 3;
            String name = in.string(200).replace("\n", "\\012");
            String path = switch (kind) {
                case 0 -> "/" + name;
                case 1 -> name.isEmpty() ? "" : "[anon:" + name.replaceAll("[\\\\`$\\[\\]\\p{Cntrl}]", "_") + "]";
                default -> "";
            };
            boolean deleted = kind == 0 && in.bool();
            StringBuilder line = new StringBuilder(String.format("%08x-%08x %s %08x %02x:%02x %d ", start, end, perms, offset, major, minor,
                    kind == 0 ? inode : 0));
            if (!path.isEmpty()) {
                while (line.length() < 73) {
                    line.append(' ');
                }
                line.append(path).append(deleted ? " (deleted)" : "");
            }
            text.append(line).append('\n');
            want.add(new MapEntry(start, end, perms, offset, major, minor, kind == 0 ? inode : 0, path, deleted));
        }
        ProcMaps.Parsed p = ProcMaps.parseCounted(text.toString());
        if (p.malformedLines() != 0 || p.entries().size() != want.size()) {
            throw new IllegalStateException("kernel lines read as " + p + ":\n" + text);
        }
        for (int i = 0; i < want.size(); i++) {
            MapEntry w = want.get(i);
            MapEntry g = p.entries().get(i);
            // A name ending in " (deleted)" is the kernel's own ambiguity: compare the text the two would print.
            String wantPath = w.path() + (w.deleted() ? " (deleted)" : "");
            String gotPath = g.path() + (g.deleted() ? " (deleted)" : "");
            if (w.start() != g.start() || w.end() != g.end() || !w.perms().equals(g.perms()) || w.offset() != g.offset()
                    || w.devMajor() != g.devMajor() || w.devMinor() != g.devMinor() || w.inode() != g.inode() || !wantPath.equals(gotPath)) {
                throw new IllegalStateException("line " + i + " read as " + g + ", written from " + w);
            }
        }
    }

    private static void rawStatus(String text) {
        ProcStatus s;
        try {
            s = ProcStatus.parse(text);
        } catch (IllegalArgumentException e) {
            return;
        }
        int[] ns = s.nsPids();
        if (s.nsPid(4242) != (ns.length == 0 ? 4242 : ns[ns.length - 1])) {
            throw new IllegalStateException("nsPid " + s.nsPid(4242) + " of " + Arrays.toString(ns));
        }
        if (s.uids().length >= 2) {
            s.euid();
        }
        if (s.gids().length >= 2) {
            s.egid();
        }
        if (hasLine(text, "SigCgt")) {
            for (int sig = 1; sig <= 64; sig++) {
                s.catches(sig);
            }
        }
    }

    private static boolean hasLine(String text, String key) {
        return text.startsWith(key + ":") || text.contains("\n" + key + ":");
    }

    /** A status as proc_pid_status writes it, the Name escaped as the kernel escapes it. */
    private static void renderedStatus(FuzzInput in) {
        String comm = escapeName(new String(in.bytes(15), StandardCharsets.ISO_8859_1));
        int[] uids = {in.i32(), in.i32(), in.i32(), in.i32()};
        int[] gids = {in.i32(), in.i32(), in.i32(), in.i32()};
        int[] nspids = new int[in.intIn(1, 4)];
        for (int i = 0; i < nspids.length; i++) {
            nspids[i] = in.i32() & 0x3fffff;
        }
        long sigCgt = in.i64();
        String text = "Name:\t" + comm + "\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t" + nspids[0] + "\nNgid:\t0\nPid:\t" + nspids[0]
                + "\nPPid:\t1\nTracerPid:\t0\nUid:\t" + tabbed(uids) + "\nGid:\t" + tabbed(gids) + "\nFDSize:\t64\nGroups:\t \nNStgid:\t"
                + tabbed(nspids) + "\nNSpid:\t" + tabbed(nspids) + "\nNSpgid:\t1\nNSsid:\t1\nVmPeak:\t    1000 kB\n"
                + "SigQ:\t0/63431\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\nSigBlk:\t0000000000000000\n"
                + "SigIgn:\t0000000000001000\nSigCgt:\t" + String.format("%016x", sigCgt) + "\nCapInh:\t0000000000000000\n";
        ProcStatus s = ProcStatus.parse(text);
        if (!Arrays.equals(s.uids(), uids) || !Arrays.equals(s.gids(), gids) || !Arrays.equals(s.nsPids(), nspids)
                || s.sigCgt() != sigCgt || s.euid() != uids[1] || s.nsPid(nspids[0]) != nspids[nspids.length - 1]) {
            throw new IllegalStateException("status read back differently:\n" + text);
        }
    }

    private static String escapeName(String comm) {
        StringBuilder b = new StringBuilder();
        for (char c : comm.toCharArray()) {
            switch (c) {
                case '\n' -> b.append("\\n");
                case '\t' -> b.append("\\t");
                case '\r' -> b.append("\\r");
                case '\f' -> b.append("\\f");
                case 0x0b -> b.append("\\v");
                case '\\' -> b.append("\\\\");
                default -> b.append(c);
            }
        }
        return b.toString();
    }

    private static String tabbed(int[] v) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < v.length; i++) {
            b.append(i == 0 ? "" : "\t").append(Integer.toUnsignedString(v[i]));
        }
        return b.toString();
    }

    private static void rawStat(String text) {
        try {
            ProcessRegistry.parseStartTicks(text, 4242);
        } catch (IOException e) {
            if (e.getMessage() == null || !e.getMessage().contains("/proc/4242/stat")) {
                throw new IllegalStateException("an error that does not name the file: " + e.getMessage(), e);
            }
        }
    }

    /** A stat line as do_task_stat writes it: comm as the process set it (up to 15 bytes, unescaped). */
    private static void renderedStat(FuzzInput in) {
        String comm = new String(in.bytes(15), StandardCharsets.ISO_8859_1);
        long start = in.i64() & Long.MAX_VALUE;
        StringBuilder b = new StringBuilder("4242 (").append(comm).append(") S 1 4242 4242 0 -1 4194560 ");
        for (int field = 10; field < 22; field++) {
            b.append(in.u8()).append(' ');
        }
        b.append(start).append(" 1234567 890 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
        long got;
        try {
            got = ProcessRegistry.parseStartTicks(b.toString(), 4242);
        } catch (IOException e) {
            throw new IllegalStateException("the kernel's stat line refused: " + b, e);
        }
        if (got != start) {
            throw new IllegalStateException("start " + got + " read from a line with " + start + ": " + b);
        }
    }

    /** Real text of this JVM's own files, and lines of the shapes a process can give its names. */
    public static void writeSeeds(Path dir) throws Exception {
        Path self = Path.of("/proc/self");
        Files.write(dir.resolve("seed-self-maps"), prefixed(0, Files.readAllBytes(self.resolve("maps"))));
        Files.write(dir.resolve("seed-self-status"), prefixed(2, Files.readAllBytes(self.resolve("status"))));
        Files.write(dir.resolve("seed-self-stat"), prefixed(4, Files.readAllBytes(self.resolve("stat"))));
        Files.write(dir.resolve("seed-odd-maps"), prefixed(0, """
                00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/my prog (deleted)
                7f0000000000-7f0000001000 rwxp 00000000 00:00 0                          [anon:v8 code]
                7f0000001000-7f0000002000 r-xp 00001000 fd:01 99                         /tmp/a (deleted) (deleted)
                7fff0000-7fff1000 r-xp 00000000 00:00 0\s
                ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
                zz-10 r-xp 0 0:0 0 bad
                """.getBytes(StandardCharsets.UTF_8)));
        Files.write(dir.resolve("seed-odd-stat"), prefixed(4, ("77 (a) b) (c d) S 1 77 77 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 "
                + "123456 0 0\n").getBytes(StandardCharsets.UTF_8)));
    }

    private static byte[] prefixed(int mode, byte[] b) {
        byte[] out = new byte[b.length + 1];
        out[0] = (byte) mode;
        System.arraycopy(b, 0, out, 1, b.length);
        return out;
    }
}
