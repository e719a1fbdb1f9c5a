package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.elf.SectionHeader;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * What a BPF program needs to read the current goroutine's id in a Go binary on x86-64: the offset of
 * {@code goid} in {@code runtime.g}, and where g is found (R14 under the register ABI of Go ≥ 1.17, else
 * at fs_base − 8).
 *
 * <p>The offset comes from the binary's DWARF ({@code runtime.g} / {@code goid}; Go compresses its
 * {@code .debug_*} sections, older linkers wrote {@code .zdebug_*}), and for binaries built with
 * {@code -ldflags=-w} from the Go version: 152 for 1.13–1.22, 160 for 1.23–1.24, 152 from 1.25.
 *
 * @param goVersion   from {@code .go.buildinfo}, empty for binaries older than Go 1.13 (which have none)
 * @param goidOffset  byte offset of {@code runtime.g.goid}
 * @param goidSource  where the offset was read
 * @param registerAbi whether g is in R14 at function entry and at RET (Go ≥ 1.17 ABIInternal)
 */
public record GoRuntimeOffsets(Optional<String> goVersion, long goidOffset, Source goidSource, boolean registerAbi) {
    /** Where {@link #goidOffset()} came from. */
    public enum Source {
        DWARF,
        VERSION_TABLE
    }

    /**
     * The offsets for a binary; empty if it is not a Go binary (no build info and no pclntab). A Go binary
     * whose offset can be read neither from DWARF nor from a known version is a {@link GoBinaryException}.
     */
    public static Optional<GoRuntimeOffsets> read(Path binary) throws GoBinaryException, IOException {
        BinaryImage img = BinaryImage.open(binary);
        Optional<GoBuildInfo> info = GoBuildInfo.read(img);
        if (info.isEmpty() && img.section(".gopclntab") == null && img.section(".data.rel.ro.gopclntab") == null) {
            return Optional.empty();
        }
        Optional<int[]> mm = info.flatMap(GoBuildInfo::majorMinor);
        boolean registerAbi = mm.map(v -> v[0] > 1 || v[1] >= 17).orElse(false);
        Optional<String> version = info.map(GoBuildInfo::version);
        OptionalLong dwarf = goidFromDwarf(img);
        if (dwarf.isPresent()) {
            return Optional.of(new GoRuntimeOffsets(version, dwarf.getAsLong(), Source.DWARF, registerAbi));
        }
        OptionalLong byVersion = mm.isPresent() ? goidOffsetForVersion(mm.get()[0], mm.get()[1]) : OptionalLong.empty();
        if (byVersion.isEmpty()) {
            throw new GoBinaryException(binary + ": no DWARF for runtime.g and Go version " + version.orElse("unknown (no .go.buildinfo)")
                    + " is not in the goid offset table (Go 1.13 and later)");
        }
        return Optional.of(new GoRuntimeOffsets(version, byVersion.getAsLong(), Source.VERSION_TABLE, registerAbi));
    }

    /** The goid offset of a released Go version on 64-bit targets, or empty before 1.13. */
    public static OptionalLong goidOffsetForVersion(int major, int minor) {
        if (major != 1) {
            return OptionalLong.empty();
        }
        if (minor < 13) {
            return OptionalLong.empty();
        }
        if (minor == 23 || minor == 24) {
            return OptionalLong.of(160);
        }
        return OptionalLong.of(152);
    }

    /** runtime.g.goid from .debug_info (or .zdebug_info), empty if the binary has no DWARF or no such member. */
    static OptionalLong goidFromDwarf(BinaryImage img) throws GoBinaryException {
        SectionHeader info = first(img, ".debug_info", ".zdebug_info");
        SectionHeader abbrev = first(img, ".debug_abbrev", ".zdebug_abbrev");
        if (info == null || abbrev == null) {
            return OptionalLong.empty();
        }
        SectionHeader str = first(img, ".debug_str", ".zdebug_str");
        DwarfStructMember d = new DwarfStructMember(img.path().toString(), img.contents(info), img.contents(abbrev),
                str == null ? null : img.contents(str));
        return d.find("runtime.g", "goid");
    }

    private static SectionHeader first(BinaryImage img, String a, String b) {
        SectionHeader s = img.section(a);
        return s != null ? s : img.section(b);
    }
}
