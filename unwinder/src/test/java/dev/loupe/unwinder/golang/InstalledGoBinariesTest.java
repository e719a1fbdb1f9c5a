package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.TestPrograms;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Go binaries built by others with Go 1.19 to 1.25 (Debian's, and those of this machine's image; all
 * stripped): build info against {@code go version}, and the 1.20+ pclntab checked by decoding every
 * function it lists against objdump (a wrong textStart or entry would land mid-instruction).
 */
class InstalledGoBinariesTest {
    /** The toolchain binary is always there; the others are used when the image has them. */
    private static final List<Path> CANDIDATES = List.of(Path.of("/usr/lib/go-1.19/bin/go"), Path.of("/usr/bin/prometheus"),
            Path.of("/usr/local/bin/terraform"), Path.of("/usr/lib/google-cloud-sdk/bin/gcloud-crc32c"),
            Path.of("/usr/lib/google-cloud-sdk/bin/gke-gcloud-auth-plugin"),
            Path.of("/usr/lib/google-cloud-sdk/bin/kubectl.1.27"),
            Path.of("/usr/lib/google-cloud-sdk/bin/local-extract"),
            Path.of("/usr/lib/google-cloud-sdk/bin/cloud_spanner_emulator/gateway_main"),
            Path.of("/usr/lib/google-cloud-sdk/platform/google_appengine/go-app-stager"));

    private static List<Path> present() {
        List<Path> out = new ArrayList<>();
        for (Path p : CANDIDATES) {
            if (Files.isRegularFile(p)) {
                out.add(p);
            }
        }
        return out;
    }

    @Test
    void buildInfoPclntabAndGoidOffsets() throws Exception {
        for (Path b : present()) {
            String out = TestPrograms.run(List.of(GoTargets.GO.toString(), "version", b.toString())).trim();
            String expected = out.substring(out.indexOf(": ") + 2);
            GoBuildInfo info = GoBuildInfo.read(b).orElseThrow();
            assertEquals(expected, info.version(), b.toString());
            int[] mm = info.majorMinor().orElseThrow();
            long t0 = System.nanoTime();
            GoPclntab tab = GoPclntab.read(b).orElseThrow();
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(mm[1] >= 20 ? "go1.20" : "go1.18", tab.format(), b.toString());
            GoRuntimeOffsets off = GoRuntimeOffsets.read(b).orElseThrow();
            assertEquals(GoRuntimeOffsets.Source.VERSION_TABLE, off.goidSource(), b + " is stripped of DWARF");
            assertEquals(mm[1] == 23 || mm[1] == 24 ? 160 : 152, off.goidOffset(), b.toString());
            assertTrue(off.registerAbi());
            System.out.printf("%s: %s, pclntab %s, %d functions in %d ms, goid at %d%n", b, info.version(), tab.format(), tab.size(),
                    ms, off.goidOffset());
        }
    }

    @Test
    void everyPclntabFunctionOfSmallGo120PlusBinariesDecodesLikeObjdump() throws Exception {
        for (Path b : present()) {
            // The toolchain binary has its own test; larger ones take objdump long (raise the limit to run them).
            long limit = Long.getLong("loupe.test.objdumpMaxBytes", 20L << 20);
            if (Files.size(b) > limit || b.startsWith("/usr/lib/go-1.19")) {
                continue;
            }
            GoPclntab tab = GoPclntab.read(b).orElseThrow();
            List<long[]> fns = new ArrayList<>();
            tab.functions().forEach(f -> fns.add(new long[] {f.entry(), f.end()}));
            DecoderObjdumpTest.Result r = DecoderObjdumpTest.compare(b, fns);
            System.out.println(b + " (" + tab.format() + "): " + r);
            assertEquals(List.of(), r.mismatches(), b.toString());
            assertTrue(r.functions() > 0.99 * tab.size() - 2, b + ": " + r + " of " + tab.size());
        }
    }
}
