package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.fuzz.FuzzInput;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;

/**
 * Fuzz target for what the latency probes read of a Go binary to find the goroutine id ({@link GoRuntimeOffsets}):
 * the {@code .go.buildinfo} blob ({@link GoBuildInfo#parse}: the Go version, the module) when the first byte is
 * even, else {@code .debug_info}/{@code .debug_abbrev}/{@code .debug_str} ({@link DwarfStructMember}: runtime.g's
 * goid; input: two 16-bit lengths, then info, abbrev and the rest as str). {@link GoBinaryException} is the
 * expected outcome of bad input; anything else escaping, a version that is not Go's, a module path over several
 * lines or a negative member offset is a finding.
 */
public final class GoRuntimeInfoFuzzTarget {
    private GoRuntimeInfoFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        try {
            if ((in.u8() & 1) == 0) {
                buildInfo(in.rest());
            } else {
                dwarf(in);
            }
        } catch (GoBinaryException e) {
            if (e.getMessage() == null || e.getMessage().isBlank()) {
                throw new IllegalStateException("an error without a message", e);
            }
        }
    }

    private static void buildInfo(byte[] b) throws GoBinaryException {
        GoBuildInfo info = GoBuildInfo.parse(null, b, 0);
        if (!info.version().startsWith("go") && !info.version().startsWith("devel")) {
            throw new IllegalStateException("version " + info.version());
        }
        info.modulePath().ifPresent(m -> {
            if (m.indexOf('\n') >= 0 || m.indexOf('\t') >= 0) {
                throw new IllegalStateException("module path over lines or fields: " + m);
            }
        });
        info.majorMinor().ifPresent(v -> {
            if (v.length != 2 || v[0] < 0 || v[1] < 0) {
                throw new IllegalStateException("major/minor " + java.util.Arrays.toString(v) + " of " + info.version());
            }
            GoRuntimeOffsets.goidOffsetForVersion(v[0], v[1]);
        });
    }

    private static void dwarf(FuzzInput in) throws GoBinaryException {
        int infoLen = in.u16();
        int abbrevLen = in.u16();
        byte[] info = in.bytesExactly(infoLen);
        byte[] abbrev = in.bytesExactly(abbrevLen);
        byte[] str = in.rest();
        OptionalLong goid = new DwarfStructMember("fuzz", info, abbrev, str.length == 0 ? null : str).find("runtime.g", "goid");
        if (goid.isPresent() && goid.getAsLong() < 0) {
            throw new IllegalStateException("goid offset " + goid.getAsLong());
        }
    }

    /** Build info of Go 1.18+ and the 1.13-1.17 pointer form (which alone must be refused), and DWARF 4 and 5. */
    public static void writeSeeds(Path dir) throws Exception {
        Files.write(dir.resolve("seed-buildinfo-module"), prefixed(0, GoSeeds.buildInfo("go1.20.14", GoSeeds.modinfo("example.com/app"))));
        Files.write(dir.resolve("seed-buildinfo-gopath"), prefixed(0, GoSeeds.buildInfo("go1.19.8",
                GoSeeds.modinfo("command-line-arguments").replace("mod\tcommand-line-arguments\t(devel)\t\n", ""))));
        Files.write(dir.resolve("seed-buildinfo-devel"), prefixed(0, GoSeeds.buildInfo("devel go1.23-4d8db00 Tue Feb 6 2024", "")));
        byte[] pointers = new byte[48];
        System.arraycopy(GoSeeds.buildInfo("go1.16", ""), 0, pointers, 0, 16);
        pointers[15] = 0; // pointer form: needs the binary
        ByteBuffer.wrap(pointers).order(ByteOrder.LITTLE_ENDIAN).putLong(16, 0x4b0000).putLong(24, 0x4b0010);
        Files.write(dir.resolve("seed-buildinfo-pointers"), prefixed(0, pointers));
        byte[][] d = GoSeeds.dwarf(152);
        ByteBuffer b = ByteBuffer.allocate(5 + d[0].length + d[1].length + d[2].length).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) 1).putShort((short) d[0].length).putShort((short) d[1].length).put(d[0]).put(d[1]).put(d[2]);
        Files.write(dir.resolve("seed-dwarf-goid"), b.array());
    }

    private static byte[] prefixed(int mode, byte[] b) {
        byte[] out = new byte[b.length + 1];
        out[0] = (byte) mode;
        System.arraycopy(b, 0, out, 1, b.length);
        return out;
    }
}
