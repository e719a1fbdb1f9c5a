package dev.loupe.unwinder.perfmap;

import dev.loupe.unwinder.fuzz.FuzzFiles;
import dev.loupe.unwinder.fuzz.FuzzInput;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Fuzz target for {@link PerfMapFile}: the {@code /tmp/perf-PID.map} a process writes (any text it likes) read
 * incrementally into a {@link PerfMapTable}, as the symbolizer reads it while the process appends, rewrites or
 * replaces it. The input is a script: the limits (the default, or small ones so the caps are hit), then up to
 * eight steps, each appending bytes, appending one long line (a fragment repeated), rewriting the file in place
 * or replacing it (a new inode), and reading it or not; a last read follows.
 *
 * <p>The reader promises never to throw: anything escaping is a finding. So is a read of the file that says
 * MISSING or REFUSED, a table over its limits, a name looked up that no line of any version of the file had, and,
 * when the file was only appended to and replaced, no limit was reached and no line is longer than the reader
 * reads: any difference from a plain model of the format (complete lines of {@code START SIZE name}, hex with or
 * without 0x, later lines winning where ranges overlap) in the names of addresses, the entries added, the
 * lines skipped or the bytes parsed.
 */
public final class PerfMapFuzzTarget {
    /** Long enough to pass the longest line the reader reads, short enough to keep executions fast. */
    private static final int MAX_LONG_LINE = PerfMapFile.MAX_LINE + 4096;

    private PerfMapFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        int flags = in.u8();
        PerfMapFile.Limits limits = (flags & 1) != 0
                ? new PerfMapFile.Limits(in.intIn(1, 64), in.intIn(1, 4096))
                : PerfMapFile.Limits.DEFAULT;
        long allowance = (flags & 2) != 0 ? in.intIn(0, 65535) : Long.MAX_VALUE;
        Path path = FuzzFiles.scratch("perf-1.map");
        byte[] content = new byte[0];
        Set<String> names = new HashSet<>();
        boolean exact = true; // the model knows what the reader has seen
        boolean appendsOnly = true; // ... and the reader's counters (kept over re-reads from scratch) are the model's
        try {
            Files.deleteIfExists(path);
            PerfMapFile file = new PerfMapFile(path, limits, null);
            if (file.read(allowance) != PerfMapFile.Outcome.MISSING) {
                throw new IllegalStateException("a missing file read as present");
            }
            Files.write(path, new byte[0]);
            int steps = in.intIn(0, 8);
            for (int s = 0; s < steps && in.hasMore(); s++) {
                int op = in.u8();
                switch (op & 3) {
                    case 0 -> { // append
                        byte[] more = in.longBytes(4096);
                        Files.write(path, more, StandardOpenOption.APPEND);
                        content = concat(content, more);
                    }
                    case 1 -> { // append a long line: a fragment repeated
                        byte[] fragment = in.bytes(32);
                        int times = Math.min(in.u16(), MAX_LONG_LINE / Math.max(1, fragment.length));
                        ByteArrayOutputStream line = new ByteArrayOutputStream();
                        line.writeBytes(in.bytes(40)); // numbers, say
                        for (int t = 0; t < times; t++) {
                            line.writeBytes(fragment);
                        }
                        line.write('\n');
                        Files.write(path, line.toByteArray(), StandardOpenOption.APPEND);
                        content = concat(content, line.toByteArray());
                    }
                    case 2 -> { // rewrite in place: same inode, new bytes
                        names.addAll(namesOf(content));
                        content = in.longBytes(4096);
                        Files.write(path, content);
                        exact = false;
                        appendsOnly = false;
                    }
                    default -> { // replace: a new file renamed over it
                        names.addAll(namesOf(content));
                        content = in.longBytes(4096);
                        Path tmp = FuzzFiles.scratch("perf-1.map.tmp");
                        Files.write(tmp, content);
                        Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                        exact = true;
                        appendsOnly = false;
                    }
                }
                if ((op & 4) != 0) {
                    read(file, allowance);
                }
            }
            read(file, allowance);
            if (file.entries() > 2 * limits.maxEntries() || file.heapBytes() < 0) {
                throw new IllegalStateException(file.entries() + " entries over the limit of " + limits.maxEntries());
            }
            Model m = Model.of(content);
            for (Line l : m.lines) {
                names.add(l.name);
            }
            for (long addr : m.probes()) {
                String got = file.lookup(addr);
                if (got != null && !names.contains(got)) {
                    throw new IllegalStateException("0x" + Long.toHexString(addr) + " named '" + got + "', a name no line had");
                }
            }
            if (exact && file.bytesOverCap() == 0 && !m.hasOverlongLine && limits == PerfMapFile.Limits.DEFAULT
                    && allowance == Long.MAX_VALUE) {
                m.compare(file, appendsOnly);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void read(PerfMapFile file, long allowance) {
        PerfMapFile.Outcome o = file.read(allowance);
        if (o == PerfMapFile.Outcome.MISSING || o == PerfMapFile.Outcome.REFUSED) {
            throw new IllegalStateException("the map read as " + o + " (the reader failed inside?)");
        }
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = new byte[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    private static Set<String> namesOf(byte[] content) {
        Set<String> out = new HashSet<>();
        for (Line l : Model.of(content).lines) {
            out.add(l.name);
        }
        return out;
    }

    private record Line(long start, long size, String name) {}

    /** The format as the reader's javadoc states it, parsed the simple way. */
    private static final class Model {
        private static final java.util.regex.Pattern LINE = java.util.regex.Pattern.compile(
                "(?:0[xX])?([0-9a-fA-F]{1,16})[ \t]+(?:0[xX])?([0-9a-fA-F]{1,16})[ \t]+"); // then the name: the rest
        final List<Line> lines = new ArrayList<>();
        long malformed;
        long parsedBytes;
        boolean hasOverlongLine;

        static Model of(byte[] content) {
            Model m = new Model();
            int from = 0;
            for (int i = 0; i < content.length; i++) {
                if (content[i] != '\n') {
                    continue;
                }
                if (i - from > PerfMapFile.MAX_LINE) {
                    m.hasOverlongLine = true;
                }
                m.parse(content, from, i);
                m.parsedBytes += i + 1 - from;
                from = i + 1;
            }
            return m;
        }

        private void parse(byte[] b, int from, int to) {
            int end = to;
            while (end > from && (b[end - 1] == '\r' || b[end - 1] == ' ' || b[end - 1] == '\t')) {
                end--;
            }
            int begin = from;
            while (begin < end && (b[begin] == ' ' || b[begin] == '\t')) {
                begin++;
            }
            if (begin == end) {
                return;
            }
            String trimmed = new String(b, begin, end - begin, StandardCharsets.ISO_8859_1);
            java.util.regex.Matcher x = LINE.matcher(trimmed);
            if (!x.lookingAt() || x.end() == trimmed.length()) {
                malformed++;
                return;
            }
            long start = Long.parseUnsignedLong(x.group(1), 16);
            long size = Long.parseUnsignedLong(x.group(2), 16);
            byte[] name = trimmed.substring(x.end()).getBytes(StandardCharsets.ISO_8859_1);
            if (start < 0 || size <= 0 || size > Integer.MAX_VALUE || start > Long.MAX_VALUE - size || name.length > PerfMapTable.MAX_NAME_BYTES) {
                malformed++;
                return;
            }
            lines.add(new Line(start, size, new String(name, StandardCharsets.UTF_8)));
        }

        /** Addresses at and around the first and last 16 lines' ranges. */
        long[] probes() {
            List<Long> p = new ArrayList<>();
            for (int i = 0; i < lines.size(); i++) {
                if (i >= 16 && i < lines.size() - 16) {
                    continue;
                }
                Line l = lines.get(i);
                p.add(l.start);
                p.add(l.start + l.size - 1);
                p.add(l.start + l.size);
                if (l.start > 0) {
                    p.add(l.start - 1);
                }
            }
            return p.stream().mapToLong(Long::longValue).toArray();
        }

        String lookup(long addr) {
            for (int i = lines.size() - 1; i >= 0; i--) {
                Line l = lines.get(i);
                if (addr >= l.start && addr - l.start < l.size) {
                    return l.name;
                }
            }
            return null;
        }

        void compare(PerfMapFile file, boolean counters) {
            for (long addr : probes()) {
                String want = lookup(addr);
                String got = file.lookup(addr);
                if (!Objects.equals(want, got)) {
                    throw new IllegalStateException("0x" + Long.toHexString(addr) + ": the reader says '" + got + "', the lines say '"
                            + want + "'");
                }
            }
            if (counters && (file.linesSkipped() != malformed || file.entriesAdded() != lines.size() || file.bytesParsed() != parsedBytes)) {
                throw new IllegalStateException("the reader skipped " + file.linesSkipped() + " lines, added " + file.entriesAdded()
                        + " entries and parsed " + file.bytesParsed() + " bytes; the lines: " + malformed + " malformed, " + lines.size()
                        + " entries, " + parsedBytes + " bytes");
            }
        }
    }

    /** Maps as node (--perf-basic-prof), the JVM (Compiler.perfmap) and Mono write them, CRLF, overlaps, bad lines. */
    public static void writeSeeds(Path dir) throws Exception {
        seed(dir, "node", """
                3ef414c0 18 Builtin:ArgumentsAdaptorTrampoline
                3ef41540 78 LazyCompile:~leaf /srv/app.js:3
                3ef41600 1a0 LazyCompile:*mid /srv/app.js:7
                3ef41600 40 LazyCompile:*mid /srv/app.js:7 (reoptimized)
                3ef417c0 2c RegExp:[a-z]+(?:\\s+)
                """);
        seed(dir, "jvm", """
                0x00007f3e1d000100 0x0000000000000080 Interpreter
                0x00007f3e1d0a0c80 0x0000000000000338 [CodeBlob (0x00007f3e1d0a0c10)] Compiled method: java.lang.String::hashCode()I
                0x00007f3e1d0a1000 0x00000000000001c0 void Spin.spin(int) [Spin.java:12]
                """);
        seed(dir, "crlf-blanks-bad", "1000 10 with trailing blanks \t \r\n  \t2000\t20\tindented\n"
                + "zz 10 not hex\n3000 0 empty range\n4000 10\n\n0x 10 no digits\n10000000000000000 1 seventeen digits\n"
                + "8000000000000000 1 negative start\n5000 80000000 size over 2^31\n6000 10 unterminated");
        seed(dir, "utf8-and-overlaps", "1000 100 outer\n1010 10 inner ünïcödé\n1000 100 outer again\n\u00ff\u00fe 1 bad\n");
    }

    private static void seed(Path dir, String name, String text) throws IOException {
        byte[] body = text.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.write(0); // default limits
        b.write(2); // two steps
        b.write(4); // append, then read
        int half = body.length / 2; // a line cut between two appends
        b.write(half & 0xff);
        b.write(half >> 8);
        b.write(body, 0, half);
        b.write(4);
        b.write((body.length - half) & 0xff);
        b.write((body.length - half) >> 8);
        b.write(body, half, body.length - half);
        Files.write(dir.resolve("seed-" + name), b.toByteArray());
    }
}
