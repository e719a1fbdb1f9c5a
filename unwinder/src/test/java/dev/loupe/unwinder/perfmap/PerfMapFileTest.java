package dev.loupe.unwinder.perfmap;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PerfMapFileTest {
    private static final PerfMapFile.Limits ROOMY = new PerfMapFile.Limits(1_000_000, 64 << 20);

    @TempDir
    Path dir;

    private PerfMapFile file(Path p, PerfMapFile.Limits limits) {
        return new PerfMapFile(p, limits, null);
    }

    private static void append(Path p, String text) throws Exception {
        Files.writeString(p, text, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    @Test
    void parsesHexWithAndWithoutPrefixAndNamesWithSpaces() throws Exception {
        Path p = dir.resolve("perf-1.map");
        Files.writeString(p, """
                7f0000001000 100 JS:*leaf /srv/app/x.js:3:14
                0x7f0000002000 0x40 LazyCompile:~mid /srv/a b/c.js:1:1
                7F0000003000 0X10 Interpreted void Foo.bar(int, java.lang.String)
                \t7f0000004000\t8\tstub with\ttab \r
                """);
        PerfMapFile f = file(p, ROOMY);
        assertEquals(PerfMapFile.Outcome.FROM_SCRATCH, f.read(Long.MAX_VALUE));
        assertEquals("JS:*leaf /srv/app/x.js:3:14", f.lookup(0x7f0000001000L));
        assertEquals("JS:*leaf /srv/app/x.js:3:14", f.lookup(0x7f00000010ffL));
        assertNull(f.lookup(0x7f0000001100L), "end is exclusive");
        assertNull(f.lookup(0x7f0000000fffL));
        assertEquals("LazyCompile:~mid /srv/a b/c.js:1:1", f.lookup(0x7f000000203fL));
        assertNull(f.lookup(0x7f0000002040L));
        assertEquals("Interpreted void Foo.bar(int, java.lang.String)", f.lookup(0x7f0000003008L));
        assertEquals("stub with\ttab", f.lookup(0x7f0000004000L), "the name keeps inner tabs, loses the CR");
        assertEquals(4, f.entries());
        assertEquals(0, f.linesSkipped());
        assertEquals(Files.size(p), f.bytesParsed());
        assertEquals(PerfMapFile.Outcome.UNCHANGED, f.read(Long.MAX_VALUE));
    }

    @Test
    void malformedLinesAreSkippedAndCounted() throws Exception {
        Path p = dir.resolve("perf-2.map");
        List<String> bad = List.of(
                "zzz 10 not hex",
                "1000 10",                      // no name
                "1000 10 ",                     // blank name
                "1000",                         // one field
                "1000 0 empty range",
                "10000000000000000 10 seventeen digits",
                "1000x 10 no separator",
                "0x 10 prefix without digits",
                "8000000000000000 10 above the user half",
                "7ffffffffffffff8 10 wraps around",
                "1000 80000000 two GiB",
                "-1000 10 negative",
                "1000 10" + " name".repeat(20_000)); // a line over MAX_LINE
        StringBuilder text = new StringBuilder("5000 10 good one\n\n   \n");
        for (String b : bad) {
            text.append(b).append('\n');
        }
        text.append("6000 10 good two\n");
        Files.writeString(p, text.toString());
        PerfMapFile f = file(p, ROOMY);
        f.read(Long.MAX_VALUE);
        assertEquals(bad.size(), f.linesSkipped(), "blank lines are not counted, every malformed one is");
        assertEquals(2, f.entries());
        assertEquals("good one", f.lookup(0x5000));
        assertEquals("good two", f.lookup(0x600f));
        assertNull(f.lookup(0x1000));
        assertEquals(Files.size(p), f.bytesParsed());
    }

    @Test
    void laterEntriesWinWhereRangesOverlap() throws Exception {
        Path p = dir.resolve("perf-3.map");
        Files.writeString(p, """
                1000 1000 old
                1400 400 newer
                1400 400 newest
                1c00 100 inside
                """);
        PerfMapFile f = file(p, ROOMY);
        f.read(Long.MAX_VALUE);
        assertEquals("old", f.lookup(0x1000));
        assertEquals("old", f.lookup(0x13ff));
        assertEquals("newest", f.lookup(0x1400));
        assertEquals("newest", f.lookup(0x17ff));
        assertEquals("old", f.lookup(0x1800));
        assertEquals("inside", f.lookup(0x1cff));
        assertEquals("old", f.lookup(0x1d00));
        assertEquals("old", f.lookup(0x1fff));
        append(p, "1f00 200 appended over the end\n");
        assertEquals(PerfMapFile.Outcome.APPENDED, f.read(Long.MAX_VALUE));
        assertEquals("old", f.lookup(0x1eff));
        assertEquals("appended over the end", f.lookup(0x1f00));
        assertEquals("appended over the end", f.lookup(0x20ff));
        assertNull(f.lookup(0x2100));
    }

    /** Random overlapping entries over several appends: every address names the last line covering it. */
    @Test
    void overlapsMatchALastWriterWinsReference() throws Exception {
        Random r = new Random(17);
        Path p = dir.resolve("perf-4.map");
        Files.writeString(p, "");
        PerfMapFile f = file(p, ROOMY);
        int space = 4096;
        String[] expected = new String[space];
        int line = 0;
        for (int round = 0; round < 12; round++) {
            StringBuilder sb = new StringBuilder();
            int n = 1 + r.nextInt(round == 0 ? 400 : 60);
            for (int k = 0; k < n; k++) {
                int start = r.nextInt(space - 1);
                int size = 1 + r.nextInt(Math.min(space - start, r.nextBoolean() ? 16 : 600));
                String name = "f" + r.nextInt(40); // repeated names: dedup and range merging are exercised
                sb.append(Integer.toHexString(0x10000 + start)).append(' ').append(Integer.toHexString(size))
                        .append(' ').append(name).append('\n');
                for (int a = start; a < start + size; a++) {
                    expected[a] = name;
                }
                line++;
            }
            append(p, sb.toString());
            f.read(Long.MAX_VALUE);
            for (int a = 0; a < space; a++) {
                assertEquals(expected[a], f.lookup(0x10000 + a), "address +" + a + " after round " + round);
            }
        }
        assertEquals(line, f.entriesAdded());
        assertTrue(f.entries() < line, "ranges replaced or merged: " + f.entries() + " of " + line);
    }

    @Test
    void partialLastLineWaitsForItsNewline() throws Exception {
        Path p = dir.resolve("perf-5.map");
        String first = "1000 10 complete\n";
        Files.writeString(p, first + "2000 10 half");
        PerfMapFile f = file(p, ROOMY);
        f.read(Long.MAX_VALUE);
        assertEquals("complete", f.lookup(0x1000));
        assertNull(f.lookup(0x2000), "not read until complete");
        assertEquals(first.length(), f.bytesParsed());
        append(p, " written\n");
        assertEquals(PerfMapFile.Outcome.APPENDED, f.read(Long.MAX_VALUE));
        assertEquals("half written", f.lookup(0x2000));
        assertEquals(Files.size(p), f.bytesParsed());
        assertEquals(0, f.linesSkipped());
    }

    @Test
    void appendedLinesAreParsedAloneFromTheOffset() throws Exception {
        Path p = dir.resolve("perf-6.map");
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 1000; i++) {
            sb.append(Integer.toHexString(0x100000 + i * 0x100)).append(" 100 fn").append(i).append('\n');
        }
        Files.writeString(p, sb.toString());
        PerfMapFile f = file(p, ROOMY);
        f.read(Long.MAX_VALUE);
        long before = f.bytesParsed();
        assertEquals(Files.size(p), before);
        String more = "300000 40 later one\n300040 40 later two\n";
        append(p, more);
        assertEquals(PerfMapFile.Outcome.APPENDED, f.read(Long.MAX_VALUE));
        assertEquals(more.length(), f.bytesParsed() - before, "only the new bytes were parsed");
        assertEquals(1002, f.entriesAdded());
        assertEquals("later two", f.lookup(0x300041));
        assertEquals("fn999", f.lookup(0x100000 + 999 * 0x100));
        assertEquals(0, f.rereadsFromScratch());
    }

    @Test
    void rewrittenInPlaceOrReplacedIsReadFromScratch() throws Exception {
        Path p = dir.resolve("perf-7.map");
        Files.writeString(p, "1000 100 first version\n2000 100 gone later\n");
        PerfMapFile f = file(p, ROOMY);
        f.read(Long.MAX_VALUE);
        assertEquals("gone later", f.lookup(0x2000));
        // Rewritten in place (same inode), longer than before: the bytes before the old offset changed.
        Files.writeString(p, "1000 100 second version!\n3000 100 new code\n4000 100 more new code\n",
                StandardOpenOption.TRUNCATE_EXISTING);
        assertEquals(PerfMapFile.Outcome.FROM_SCRATCH, f.read(Long.MAX_VALUE));
        assertEquals("second version!", f.lookup(0x1000));
        assertNull(f.lookup(0x2000), "the old content is forgotten");
        assertEquals("more new code", f.lookup(0x4000));
        // Replaced by another file of the same length under the same name: another inode.
        String same = "1000 100 third version!!\n3000 100 new code\n4000 100 more new code\n";
        assertEquals(Files.size(p), same.length());
        Path tmp = dir.resolve("next");
        Files.writeString(tmp, same);
        Files.move(tmp, p, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        assertEquals(PerfMapFile.Outcome.FROM_SCRATCH, f.read(Long.MAX_VALUE));
        assertEquals("third version!!", f.lookup(0x1000));
        assertEquals(2, f.rereadsFromScratch());
    }

    @Test
    void truncatedMidLineIsReadFromScratchUpToItsLastCompleteLine() throws Exception {
        Path p = dir.resolve("perf-8.map");
        String text = "1000 100 one\n2000 100 two\n3000 100 three\n";
        Files.writeString(p, text);
        PerfMapFile f = file(p, ROOMY);
        f.read(Long.MAX_VALUE);
        assertEquals("three", f.lookup(0x3000));
        try (var ch = java.nio.channels.FileChannel.open(p, StandardOpenOption.WRITE)) {
            ch.truncate(text.indexOf("two") + 1); // "...\n2000 100 t"
        }
        assertEquals(PerfMapFile.Outcome.FROM_SCRATCH, f.read(Long.MAX_VALUE));
        assertEquals("one", f.lookup(0x1000));
        assertNull(f.lookup(0x2000), "a cut line is not read");
        assertNull(f.lookup(0x3000));
        assertEquals(0, f.linesSkipped());
        append(p, "wo again\n");
        assertEquals(PerfMapFile.Outcome.APPENDED, f.read(Long.MAX_VALUE));
        assertEquals("two again", f.lookup(0x2000));
    }

    @Test
    void missingSymlinkFifoAndForeignOwnerGiveNothing() throws Exception {
        PerfMapFile missing = file(dir.resolve("perf-9.map"), ROOMY);
        assertEquals(PerfMapFile.Outcome.MISSING, missing.read(Long.MAX_VALUE));
        assertNull(missing.lookup(0x1000));

        Path real = dir.resolve("real.map");
        Files.writeString(real, "1000 100 secret\n");
        Path link = Files.createSymbolicLink(dir.resolve("perf-10.map"), real);
        PerfMapFile viaLink = file(link, ROOMY);
        assertEquals(PerfMapFile.Outcome.REFUSED, viaLink.read(Long.MAX_VALUE));
        assertNull(viaLink.lookup(0x1000));

        Path fifo = dir.resolve("perf-11.map");
        Process mk = new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start();
        assertEquals(0, mk.waitFor());
        assertEquals(PerfMapFile.Outcome.REFUSED, file(fifo, ROOMY).read(Long.MAX_VALUE), "never opened: it would block");

        Path foreign = dir.resolve("perf-12.map");
        Files.writeString(foreign, "1000 100 planted\n");
        Files.setAttribute(foreign, "unix:uid", 4321);
        assertEquals(PerfMapFile.Outcome.REFUSED, new PerfMapFile(foreign, ROOMY, new int[] {1000, 1000}).read(Long.MAX_VALUE));
        PerfMapFile own = new PerfMapFile(foreign, ROOMY, new int[] {4321, 4321});
        assertEquals(PerfMapFile.Outcome.FROM_SCRATCH, own.read(Long.MAX_VALUE));
        assertEquals("planted", own.lookup(0x1000));

        // A file that disappears after a read keeps what was read (the code it named may still run).
        Files.delete(foreign);
        assertEquals(PerfMapFile.Outcome.MISSING, own.read(Long.MAX_VALUE));
        assertEquals("planted", own.lookup(0x1000));
    }

    /** JITs reuse code space: names of replaced ranges are dropped from the arena when it fills. */
    @Test
    void churnUnderTheNameLimitCompactsInsteadOfStopping() throws Exception {
        Path p = dir.resolve("perf-13.map");
        Files.writeString(p, "");
        PerfMapFile f = file(p, new PerfMapFile.Limits(100, 4096));
        for (int round = 0; round < 40; round++) {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < 50; i++) {
                sb.append(Integer.toHexString(0x1000 + i * 0x40)).append(" 40 fn_").append(round).append('_').append(i).append('\n');
            }
            append(p, sb.toString());
            f.read(Long.MAX_VALUE);
            assertEquals("fn_" + round + "_7", f.lookup(0x1000 + 7 * 0x40 + 3));
        }
        assertEquals(0, f.bytesOverCap(), "the live names always fit");
        assertEquals(2000, f.entriesAdded(), "40 rounds of 50 lines, ~28 KB of names through a 4 KiB arena");
        assertEquals(50, f.entries());
    }

    @Test
    void nameLimitStopsAndCountsTheRest() throws Exception {
        Path p = dir.resolve("perf-14.map");
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 200; i++) {
            sb.append(Integer.toHexString(0x1000 + i * 0x10)).append(" 10 name_number_").append(1000 + i).append('\n');
        }
        Files.writeString(p, sb.toString());
        PerfMapFile f = file(p, new PerfMapFile.Limits(1000, 1024)); // 2 + 16 bytes a name: 56 fit
        f.read(Long.MAX_VALUE);
        assertEquals(56, f.entries());
        assertEquals(Files.size(p), f.bytesParsed() + f.bytesOverCap());
        assertEquals("name_number_1055", f.lookup(0x1000 + 55 * 0x10));
        assertNull(f.lookup(0x1000 + 56 * 0x10));
        // Appended lines are over the cap too; no error, counted.
        long over = f.bytesOverCap();
        String more = "9000 10 one more, with a name longer than the room left\n";
        append(p, more);
        f.read(Long.MAX_VALUE);
        assertEquals(over + more.length(), f.bytesOverCap());
        assertNull(f.lookup(0x9000));
    }

    @Test
    void heapAllowanceStopsAndCountsTheRest() throws Exception {
        Path p = dir.resolve("perf-15.map");
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 20_000; i++) {
            sb.append(Integer.toHexString(0x100000 + i * 0x10)).append(" 10 fn").append(i).append('\n');
        }
        Files.writeString(p, sb.toString());
        PerfMapFile f = file(p, ROOMY);
        f.read(64 << 10);
        assertTrue(f.entries() > 0 && f.entries() < 20_000, "entries " + f.entries());
        assertTrue(f.heapBytes() < 3 * (64 << 10), "heap " + f.heapBytes());
        assertTrue(f.bytesOverCap() > 0);
        assertEquals(Files.size(p), f.bytesParsed() + f.bytesOverCap());
    }

    /**
     * A 500 MB map (10 M lines) read under a 1 M entry cap: exactly the cap is kept, the rest counted and
     * not read, and the heap grows by a bounded amount.
     */
    @Test
    void fiveHundredMegabyteMapStaysWithinTheCap() throws Exception {
        Path p = dir.resolve("perf-16.map");
        int lines = 10_000_000;
        long written = writeBigMap(p, lines);
        assertTrue(written >= 500_000_000L, "map size " + written);
        Runtime rt = Runtime.getRuntime();
        System.gc();
        long usedBefore = rt.totalMemory() - rt.freeMemory();
        PerfMapFile f = file(p, ROOMY);
        long t0 = System.nanoTime();
        assertEquals(PerfMapFile.Outcome.FROM_SCRATCH, f.read(Long.MAX_VALUE));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.gc();
        long grown = rt.totalMemory() - rt.freeMemory() - usedBefore;
        System.out.printf("500 MB perf map: %d entries kept, %d bytes parsed, %d over the cap, read in %d ms, heap +%d MB%n",
                f.entries(), f.bytesParsed(), f.bytesOverCap(), ms, grown >> 20);
        assertEquals(1_000_000, f.entries());
        assertEquals(1_000_000, f.entriesAdded());
        assertTrue(f.bytesOverCap() > 400_000_000L, "over cap " + f.bytesOverCap());
        assertEquals(written, f.bytesParsed() + f.bytesOverCap());
        assertTrue(grown < 200L << 20, "heap grew " + (grown >> 20) + " MB");
        assertEquals("JS:*fn0 /srv/app/module0.js:0:1", f.lookup(0x7f0000000000L));
        assertEquals("JS:*fn999999 /srv/app/module99.js:9999:1", f.lookup(0x7f0000000000L + 999_999L * 0x40 + 0x3f));
        assertNull(f.lookup(0x7f0000000000L + 1_000_000L * 0x40), "beyond the cap: unknown");
        // Appending to it keeps it bounded, and is not parsed.
        append(p, "7e0000000000 40 late\n");
        f.read(Long.MAX_VALUE);
        assertEquals(1_000_000, f.entries());
        assertNull(f.lookup(0x7e0000000000L));
    }

    /** Lines {@code START 40 JS:*fnI /srv/app/moduleJ.js:L:1}, written through one buffer (~58 bytes a line). */
    private static long writeBigMap(Path p, int lines) throws Exception {
        byte[] buf = new byte[1 << 20];
        int n = 0;
        long total = 0;
        try (OutputStream out = Files.newOutputStream(p)) {
            for (int i = 0; i < lines; i++) {
                if (n > buf.length - 128) {
                    out.write(buf, 0, n);
                    total += n;
                    n = 0;
                }
                n = putHex(buf, n, 0x7f0000000000L + (long) i * 0x40);
                n = putAscii(buf, n, " 40 JS:*fn");
                n = putDecimal(buf, n, i);
                n = putAscii(buf, n, " /srv/app/module");
                n = putDecimal(buf, n, i % 100);
                n = putAscii(buf, n, ".js:");
                n = putDecimal(buf, n, i % 10_000);
                n = putAscii(buf, n, ":1\n");
            }
            out.write(buf, 0, n);
            total += n;
        }
        return total;
    }

    private static int putAscii(byte[] b, int n, String s) {
        for (int i = 0; i < s.length(); i++) {
            b[n++] = (byte) s.charAt(i);
        }
        return n;
    }

    private static int putHex(byte[] b, int n, long v) {
        String s = Long.toHexString(v);
        return putAscii(b, n, s);
    }

    private static int putDecimal(byte[] b, int n, int v) {
        return putAscii(b, n, Integer.toString(v));
    }

    @Test
    void namesAreUtf8() throws Exception {
        Path p = dir.resolve("perf-17.map");
        Files.write(p, "1000 10 JS:*grüße /srv/ü.js:1:1\n".getBytes(StandardCharsets.UTF_8));
        PerfMapFile f = file(p, ROOMY);
        f.read(Long.MAX_VALUE);
        assertEquals("JS:*grüße /srv/ü.js:1:1", f.lookup(0x1000));
    }

    @Test
    void stableSortKeepsArrivalOrderOfEqualStarts() {
        long[] keys = {5, 3, 5, 1, 3, 5, 0};
        int[] order = PerfMapTable.sortedByStart(keys, keys.length);
        assertEquals(List.of(6, 3, 1, 4, 0, 2, 5), toList(order));
    }

    private static List<Integer> toList(int[] a) {
        List<Integer> l = new ArrayList<>();
        for (int v : a) {
            l.add(v);
        }
        return l;
    }
}
