package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.ehframe.ElfSections;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

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

    /** Runs {@code p} on every prefix length in steps, and on copies with random bytes overwritten. */
    private static int[] torture(byte[] good, Parse p) {
        int ok = 0;
        int rejected = 0;
        int step = Math.max(1, good.length / 400);
        for (int len = 0; len < good.length; len += step) {
            if (attempt(Arrays.copyOf(good, len), p)) {
                ok++;
            } else {
                rejected++;
            }
        }
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
        return new int[] {ok, rejected};
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
        int[] r = torture(good, b -> GoPclntab.parse("test", b, 0x401000, 0, loads));
        System.out.println("pclntab: parsed " + r[0] + ", rejected " + r[1]);
        assertTrue(r[1] > 300, "truncations are rejected");
        GoBinaryException e = assertThrows(GoBinaryException.class,
                () -> GoPclntab.parse("test", Arrays.copyOf(good, good.length / 2), 0x401000, 0, loads));
        assertTrue(e.getMessage().startsWith("test: .gopclntab: "), e.getMessage());
    }

    @Test
    void buildInfo() throws Exception {
        byte[] good = section(targets.strippedPie, ".go.buildinfo");
        int[] r = torture(good, b -> GoBuildInfo.parse(null, b, 0));
        System.out.println("buildinfo: parsed " + r[0] + ", rejected " + r[1]);
        assertEquals("go1.19.8", GoBuildInfo.parse(null, good, 0).version());
        GoBinaryException e = assertThrows(GoBinaryException.class, () -> GoBuildInfo.parse(null, Arrays.copyOf(good, 40), 0));
        assertTrue(e.getMessage().contains("runs past the end"), e.getMessage());
    }

    @Test
    void dwarf() throws Exception {
        byte[] info = section(targets.normal, ".debug_info");
        byte[] abbrev = section(targets.normal, ".debug_abbrev");
        assertEquals(152, new DwarfStructMember("t", info, abbrev, null).find("runtime.g", "goid").getAsLong());
        int[] r = torture(info, b -> new DwarfStructMember("t", b, abbrev, null).find("runtime.g", "goid"));
        int[] a = torture(abbrev, b -> new DwarfStructMember("t", info, b, null).find("runtime.g", "goid"));
        System.out.println("debug_info: found/absent " + r[0] + ", rejected " + r[1] + "; debug_abbrev: " + a[0] + ", " + a[1]);
        assertTrue(r[1] > 0 && a[1] > 0);
    }

    @Test
    void truncatedFiles() throws Exception {
        byte[] whole = Files.readAllBytes(targets.strippedPie);
        Path cut = dir.resolve("cut");
        int ok = 0;
        int rejected = 0;
        for (int i = 1; i <= 24; i++) {
            Files.write(cut, Arrays.copyOf(whole, (int) ((long) whole.length * i / 25)));
            for (int what = 0; what < 3; what++) {
                try {
                    switch (what) {
                        case 0 -> GoPclntab.read(cut);
                        case 1 -> GoRuntimeOffsets.read(cut);
                        default -> FunctionResolver.resolve(cut, "main.*");
                    }
                    ok++;
                } catch (GoBinaryException | FunctionResolutionException | IOException e) {
                    assertTrue(e.getMessage() != null && !e.getMessage().isBlank());
                    rejected++;
                }
            }
        }
        System.out.println("truncated files: read " + ok + ", rejected " + rejected);
        assertTrue(rejected > 0);
        Files.writeString(cut, "not an ELF file at all, just text. ".repeat(10));
        GoBinaryException e = assertThrows(GoBinaryException.class, () -> GoPclntab.read(cut));
        assertEquals(cut + ": not an ELF file (no \\x7fELF magic)", e.getMessage());
    }
}
