package dev.loupe.unwinder.ehframe;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * For every FDE of real binaries, the compiled table's rule at every row boundary (and at the last byte
 * of every row) equals what binutils' readelf decodes, and every gap after an FDE is a stop.
 */
class ReadelfOracleTest {
    static final String LIBJVM = Path.of(System.getProperty("java.home"), "lib", "server", "libjvm.so").toString();

    @TempDir
    Path tmp;

    @ParameterizedTest
    @ValueSource(strings = {"/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11", "JDK-LIBJVM"})
    void everyFdeRowMatchesReadelf(String file) throws Exception {
        Path path = Path.of(file.equals("JDK-LIBJVM") ? LIBJVM : file);
        UnwindTable table = UnwindTableBuilder.build(path);
        Result r = compare(path, table, tmp, Set.of(".eh_frame"));
        BuildStats s = table.stats();
        assertEquals(0, s.skippedEntries(), s.firstProblems().toString());
        assertEquals(0, s.malformedFdes(), s.firstProblems().toString());
        assertEquals(0, s.overlapping());
        assertEquals(r.fdes, s.fdes(), "FDEs in the table vs FDEs readelf lists inside the text");
        assertEquals(r.fdes, s.hdrEntries(), ".eh_frame_hdr lists every FDE");
        assertEquals(0, s.hdrMismatches());
        assertTrue(r.rows > 1000, "rows compared: " + r.rows);
        assertTrue(r.mismatches.isEmpty(), r.mismatches.size() + " mismatches of " + r.rows + " rows, e.g.\n"
                + String.join("\n", r.mismatches.subList(0, Math.min(20, r.mismatches.size()))));
        assertTrue(table.bytesPerRow() <= 8, "bytes per row " + table.bytesPerRow());
    }

    record Result(int fdes, int rows, List<String> mismatches) {}

    /** Compares the table against readelf for the FDEs of the given sections. */
    static Result compare(Path path, UnwindTable table, Path tmp, Set<String> sections) throws Exception {
        ReadelfFrames rf = ReadelfFrames.of(path, tmp);
        List<String> bad = new ArrayList<>();
        Set<Long> starts = new HashSet<>();
        List<ReadelfFrames.Entry> fdes = new ArrayList<>();
        for (String sec : sections) {
            for (ReadelfFrames.Entry e : rf.fdes(sec)) {
                if (e.pcEnd() != e.pcBegin() && table.lookup(e.pcBegin()) != UnwindRule.NOT_COVERED) {
                    fdes.add(e);
                    starts.add(e.pcBegin());
                }
            }
        }
        int rows = 0;
        for (ReadelfFrames.Entry fde : fdes) {
            ReadelfFrames.Entry cie = rf.cieOf(fde);
            List<ReadelfFrames.Row> rs = fde.rows();
            if (rs.isEmpty()) { // readelf prints no table for an FDE of only nops: the CIE's rules apply
                ReadelfFrames.Row c = cie.rows().getLast();
                rs = List.of(new ReadelfFrames.Row(fde.pcBegin(), c.cfa(), c.rbp(), c.ra(), c.rsp()));
            }
            for (int i = 0; i < rs.size(); i++) {
                ReadelfFrames.Row row = rs.get(i);
                long from = row.loc();
                long to = i + 1 < rs.size() ? Math.min(rs.get(i + 1).loc(), fde.pcEnd()) : fde.pcEnd();
                if (from >= fde.pcEnd() || to <= from) {
                    continue; // outside the FDE, or replaced by a later row at the same location
                }
                rows++;
                long want = ReadelfFrames.expected(row, fde, cie);
                for (long pc : new long[] {from, to - 1}) {
                    long got = table.lookup(pc);
                    boolean ok = got == want || (row.rbp().equals("u") && UnwindRule.kind(want) != UnwindRule.KIND_STOP
                            && got == UnwindRule.cfa(UnwindRule.kind(want), UnwindRule.cfaOffset(want), UnwindRule.RBP_UNKNOWN, 0));
                    if (!ok) {
                        bad.add(String.format("%s FDE@%x pc %x: readelf cfa=%s rbp=%s ra=%s -> want %s, table has %s", fde.section(),
                                fde.offset(), pc, row.cfa(), row.rbp(), row.ra(), UnwindRule.toString(want), UnwindRule.toString(got)));
                    }
                }
            }
            if (!starts.contains(fde.pcEnd())) {
                long got = table.lookup(fde.pcEnd());
                if (got != UnwindRule.NOT_COVERED && got != UnwindRule.stop(StopReason.NO_UNWIND_INFO)) {
                    bad.add(String.format("FDE@%x: end %x is not a stop: %s", fde.offset(), fde.pcEnd(), UnwindRule.toString(got)));
                }
            }
        }
        return new Result(fdes.size(), rows, bad);
    }
}
