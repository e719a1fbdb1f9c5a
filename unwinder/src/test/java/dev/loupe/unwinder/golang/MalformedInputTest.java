package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.ehframe.ElfSections;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.SortedMap;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Truncated and corrupted Go metadata: every outcome is a result or a GoBinaryException (IOException for
 * files), never another exception, a hang or an allocation sized by a corrupt field.
 */
class MalformedInputTest {
    @TempDir
    static Path dir;
    static GoTargets targets;

    @BeforeAll
    static void build() throws Exception {
        targets = GoTargets.shared();
    }

    interface Parse {
        void run(byte[] b) throws GoBinaryException;
    }

    /**
     * What {@link #torture} saw: each prefix length tried, and whether it parsed; how many of the copies with
     * random bytes overwritten parsed and how many were rejected.
     */
    record Outcomes(SortedMap<Integer, Boolean> prefixes, int corruptedParsed, int corruptedRejected) {
        /** The prefix lengths in [from, to) that were tried, asserting each had the outcome {@code parsed}. */
        int assertPrefixes(int from, int to, boolean parsed, String what) {
            SortedMap<Integer, Boolean> range = prefixes.subMap(from, to);
            range.forEach((len, ok) -> assertEquals(parsed, ok, what + ": prefix of " + len + " bytes"));
            return range.size();
        }

        @Override
        public String toString() {
            long parsed = prefixes.values().stream().filter(ok -> ok).count();
            return "prefixes parsed " + parsed + ", rejected " + (prefixes.size() - parsed) + "; corrupted copies parsed "
                    + corruptedParsed + ", rejected " + corruptedRejected;
        }
    }

    /** Runs {@code p} on every prefix length in steps, and on copies with random bytes overwritten. */
    private static Outcomes torture(byte[] good, Parse p) {
        SortedMap<Integer, Boolean> prefixes = new TreeMap<>();
        int step = Math.max(1, good.length / 400);
        for (int len = 0; len < good.length; len += step) {
            prefixes.put(len, attempt(Arrays.copyOf(good, len), p));
        }
        int ok = 0;
        int rejected = 0;
        Random rnd = new Random(42);
        for (int i = 0; i < 300; i++) {
            byte[] b = good.clone();
            for (int k = 0; k < 4; k++) {
                // Headers matter most: corrupt the first 256 bytes half of the time.
                int at = rnd.nextBoolean() ? rnd.nextInt(Math.min(256, b.length)) : rnd.nextInt(b.length);
                b[at] = (byte) rnd.nextInt(256);
            }
            if (attempt(b, p)) {
                ok++;
            } else {
                rejected++;
            }
        }
        return new Outcomes(prefixes, ok, rejected);
    }

    private static boolean attempt(byte[] b, Parse p) {
        try {
            p.run(b);
            return true;
        } catch (GoBinaryException e) {
            assertTrue(e.getMessage() != null && !e.getMessage().isBlank());
            return false;
        }
    }

    private static byte[] section(Path binary, String name) throws Exception {
        ElfSections es = ElfSections.read(binary);
        return es.contents(es.find(name));
    }

    @Test
    void pclntab() throws Exception {
        byte[] good = section(targets.normal, ".gopclntab");
        List<dev.loupe.unwinder.elf.LoadSegment> loads = dev.loupe.unwinder.elf.ElfLoadSegments.read(targets.normal);
        Outcomes r = torture(good, b -> GoPclntab.parse("test", b, 0x401000, 0, loads));
        System.out.println("pclntab: " + r);
        // Go 1.18+ header: nfunc at 8, the function table's offset at 8 + 7 pointers; its nfunc 8-byte entries and
        // the closing end pc must all be there.
        ByteBuffer h = ByteBuffer.wrap(good).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(8, good[7], "pointer size");
        long functabEnd = h.getLong(8 + 7 * 8) + 8 * h.getLong(8) + 4;
        int cut = r.assertPrefixes(0, (int) functabEnd, false, "a prefix without the whole function table");
        assertTrue(cut > 200, "most prefixes end before the function table does: " + cut + " (" + functabEnd + " of "
                + good.length + " bytes)");
        GoBinaryException e = assertThrows(GoBinaryException.class,
                () -> GoPclntab.parse("test", Arrays.copyOf(good, good.length / 2), 0x401000, 0, loads));
        assertTrue(e.getMessage().startsWith("test: .gopclntab: "), e.getMessage());
    }

    @Test
    void buildInfo() throws Exception {
        byte[] good = section(targets.strippedPie, ".go.buildinfo");
        Outcomes r = torture(good, b -> GoBuildInfo.parse(null, b, 0));
        System.out.println("buildinfo: " + r);
        assertEquals("go1.19.8", GoBuildInfo.parse(null, good, 0).version());
        // Go 1.18+: a 32-byte header, then the version and the module info, each a uvarint length and its bytes.
        int[] at = {32};
        for (int field = 0; field < 2; field++) {
            int length = (int) uvarint(good, at);
            at[0] += length;
        }
        int end = at[0];
        int cut = r.assertPrefixes(0, end, false, "a prefix without the whole module info");
        int whole = r.assertPrefixes(end, good.length, true, "a prefix with the version and the module info");
        assertTrue(cut > 100 && whole > 0, cut + " prefixes shorter than the " + end + " bytes read, " + whole + " not");
        GoBinaryException e = assertThrows(GoBinaryException.class, () -> GoBuildInfo.parse(null, Arrays.copyOf(good, 40), 0));
        assertTrue(e.getMessage().contains("runs past the end"), e.getMessage());
    }

    @Test
    void dwarf() throws Exception {
        byte[] info = section(targets.normal, ".debug_info");
        byte[] abbrev = section(targets.normal, ".debug_abbrev");
        assertEquals(152, new DwarfStructMember("t", info, abbrev, null).find("runtime.g", "goid").getAsLong());
        Outcomes r = torture(info, b -> new DwarfStructMember("t", b, abbrev, null).find("runtime.g", "goid"));
        Outcomes a = torture(abbrev, b -> new DwarfStructMember("t", info, b, null).find("runtime.g", "goid"));
        System.out.println("debug_info: " + r + "; debug_abbrev: " + a);

        // .debug_info is a run of units, each after its 32-bit length. A prefix that ends inside a unit before goid
        // is found claims more than it holds: rejected. One that ends on a unit boundary there reads as "no goid",
        // and one that holds goid's unit whole finds it.
        List<Integer> unitEnds = new ArrayList<>();
        for (int p = 0; p < info.length; ) {
            p += 4 + ByteBuffer.wrap(info, p, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
            unitEnds.add(p);
        }
        assertEquals(info.length, unitEnds.getLast(), "the units fill the section");
        int goidUnitEnd = -1;
        for (int e : unitEnds) {
            if (new DwarfStructMember("t", Arrays.copyOf(info, e), abbrev, null).find("runtime.g", "goid").isPresent()) {
                goidUnitEnd = e;
                break;
            }
        }
        assertTrue(goidUnitEnd > 0);
        for (var e : r.prefixes().headMap(goidUnitEnd).entrySet()) {
            boolean onBoundary = e.getKey() == 0 || unitEnds.contains(e.getKey());
            assertEquals(onBoundary, e.getValue(), "a prefix of " + e.getKey() + " bytes, goid's unit ends at " + goidUnitEnd);
        }
        for (int len : r.prefixes().tailMap(goidUnitEnd).keySet()) {
            assertEquals(152, new DwarfStructMember("t", Arrays.copyOf(info, len), abbrev, null).find("runtime.g", "goid").getAsLong());
        }
        int inside = (int) r.prefixes().headMap(goidUnitEnd).keySet().stream().filter(len -> len != 0 && !unitEnds.contains(len)).count();
        assertTrue(inside > 300, "prefixes ending inside a unit before goid's: " + inside);

        // Go writes one abbreviation table, its closing 0 the section's last byte: any prefix lacks it.
        assertEquals(0, abbrev[abbrev.length - 1]);
        assertEquals(a.prefixes().size(), a.assertPrefixes(0, abbrev.length, false, ".debug_abbrev"));
    }

    @Test
    void truncatedFiles() throws Exception {
        byte[] whole = Files.readAllBytes(targets.strippedPie);
        // What the three readers need lies before the data sections: the headers, the pclntab, the build info.
        ElfSections sections = ElfSections.read(targets.strippedPie);
        var pclntab = sections.find(".data.rel.ro.gopclntab");
        var buildInfo = sections.find(".go.buildinfo");
        long pclntabEnd = pclntab.offset() + pclntab.size();
        long needed = Math.max(pclntabEnd, buildInfo.offset() + buildInfo.size());
        Path cut = dir.resolve("cut");
        int ok = 0;
        int rejected = 0;
        int withoutPclntab = 0;
        int withAllNeeded = 0;
        for (int i = 1; i <= 24; i++) {
            int length = (int) ((long) whole.length * i / 25);
            Files.write(cut, Arrays.copyOf(whole, length));
            int read = 0;
            for (int what = 0; what < 3; what++) {
                try {
                    switch (what) {
                        case 0 -> GoPclntab.read(cut);
                        case 1 -> GoRuntimeOffsets.read(cut);
                        default -> FunctionResolver.resolve(cut, "main.*");
                    }
                    read++;
                } catch (GoBinaryException | FunctionResolutionException | IOException e) {
                    assertTrue(e.getMessage() != null && !e.getMessage().isBlank());
                }
            }
            ok += read;
            rejected += 3 - read;
            if (length < pclntabEnd) {
                withoutPclntab++;
                assertEquals(0, read, "a file cut at " + length + ", inside the pclntab (ends at " + pclntabEnd + "), is rejected by all 3");
            } else if (length >= needed) {
                withAllNeeded++;
                assertEquals(3, read, "a file cut at " + length + ", after the pclntab and the build info (" + needed + "), is read by all 3");
            }
        }
        System.out.println("truncated files: read " + ok + ", rejected " + rejected + "; cuts inside the pclntab " + withoutPclntab
                + ", after what the readers need " + withAllNeeded);
        assertTrue(withoutPclntab >= 20 && withAllNeeded >= 1, withoutPclntab + " cuts of 24 inside the pclntab or before it, "
                + withAllNeeded + " after all the readers need");
        Files.writeString(cut, "not an ELF file at all, just text. ".repeat(10));
        GoBinaryException e = assertThrows(GoBinaryException.class, () -> GoPclntab.read(cut));
        assertEquals(cut + ": not an ELF file (no \\x7fELF magic)", e.getMessage());
    }

    /** A Go uvarint at {@code at[0]}, which moves past it. */
    private static long uvarint(byte[] b, int[] at) {
        long v = 0;
        for (int shift = 0; ; shift += 7) {
            int x = b[at[0]++] & 0xff;
            v |= (long) (x & 0x7f) << shift;
            if (x < 0x80) {
                return v;
            }
        }
    }
}
