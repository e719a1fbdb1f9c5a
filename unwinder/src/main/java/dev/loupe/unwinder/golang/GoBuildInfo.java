package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.elf.LoadSegment;
import dev.loupe.unwinder.elf.SectionHeader;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Go version (and main module path) a binary was built with, from its {@code .go.buildinfo} blob:
 * 16-byte-aligned, starting with {@code "\xff Go buildinf:"}, then pointer size and flags. Go 1.18+ (flag
 * bit 2) stores the version and module info inline as varint-length strings after the 32-byte header;
 * older versions store two pointers to Go string headers {@code {ptr, len}}.
 *
 * @param version    e.g. {@code go1.19.8}
 * @param modulePath the main module ({@code mod} line), else the main package path ({@code path}
 *                   line); empty when the binary records neither (GOPATH builds record only the path)
 */
public record GoBuildInfo(String version, Optional<String> modulePath) {
    private static final byte[] MAGIC = "\u00ff Go buildinf:".getBytes(StandardCharsets.ISO_8859_1);
    private static final int HEADER = 32;
    private static final int MAX_STRING = 1 << 20;
    private static final Pattern VERSION = Pattern.compile("go(\\d+)\\.(\\d+)");

    /** The build info of an ELF file; empty if it has none (not a Go binary). */
    public static Optional<GoBuildInfo> read(Path binary) throws GoBinaryException, IOException {
        return read(BinaryImage.open(binary));
    }

    static Optional<GoBuildInfo> read(BinaryImage img) throws GoBinaryException {
        SectionHeader s = img.section(".go.buildinfo");
        if (s != null) {
            byte[] b = img.contents(s);
            if (!startsWithMagic(b, 0)) {
                throw new GoBinaryException(img.path() + ": .go.buildinfo does not start with the build info magic");
            }
            return Optional.of(parse(img, b, 0));
        }
        // No section headers: Go places the blob at the start of the first writable segment; look at
        // 16-byte boundaries in its first 64 KiB.
        for (LoadSegment seg : img.loads()) {
            if ((seg.flags() & 2) == 0 || seg.fileSize() < HEADER) {
                continue;
            }
            byte[] b = img.read(seg.offset(), (int) Math.min(seg.fileSize(), 64 << 10), "writable segment");
            for (int o = 0; o + HEADER <= b.length; o += 16) {
                if (startsWithMagic(b, o)) {
                    byte[] rest = img.read(seg.offset() + o, (int) Math.min(seg.fileSize() - o, 2 * MAX_STRING), "build info");
                    return Optional.of(parse(img, rest, 0));
                }
            }
        }
        return Optional.empty();
    }

    private static boolean startsWithMagic(byte[] b, int o) {
        if (b.length - o < MAGIC.length) {
            return false;
        }
        for (int i = 0; i < MAGIC.length; i++) {
            if (b[o + i] != MAGIC[i]) {
                return false;
            }
        }
        return true;
    }

    static GoBuildInfo parse(BinaryImage img, byte[] b, int at) throws GoBinaryException {
        String where = img == null ? "build info" : img.path() + ": .go.buildinfo";
        if (b.length - at < HEADER) {
            throw new GoBinaryException(where + ": truncated header (" + (b.length - at) + " bytes)");
        }
        int ptrSize = b[at + 14] & 0xff;
        int flags = b[at + 15] & 0xff;
        if ((flags & 1) != 0) {
            throw new GoBinaryException(where + ": big-endian build info is not supported (x86-64 only)");
        }
        String version;
        String modinfo;
        if ((flags & 2) != 0) { // Go 1.18+: inline strings
            int[] pos = {at + HEADER};
            version = varintString(b, pos, where, "version");
            modinfo = varintString(b, pos, where, "module info");
        } else {
            if (ptrSize != 8 && ptrSize != 4) {
                throw new GoBinaryException(where + ": pointer size " + ptrSize + " (expected 4 or 8)");
            }
            if (img == null) {
                throw new GoBinaryException(where + ": pointer format needs the binary to follow pointers");
            }
            version = pointedString(img, b, at + 16, ptrSize, where, "version");
            modinfo = pointedString(img, b, at + 16 + ptrSize, ptrSize, where, "module info");
        }
        if (!version.startsWith("go") && !version.startsWith("devel")) {
            throw new GoBinaryException(where + ": version string '" + abbreviate(version) + "' is not a Go version");
        }
        return new GoBuildInfo(version, modulePath(modinfo));
    }

    private static String varintString(byte[] b, int[] pos, String where, String what) throws GoBinaryException {
        long len = 0;
        int shift = 0;
        int p = pos[0];
        while (true) {
            if (p >= b.length) {
                throw new GoBinaryException(where + ": " + what + " length runs past the end");
            }
            int v = b[p++] & 0xff;
            len |= (long) (v & 0x7f) << shift;
            if ((v & 0x80) == 0) {
                break;
            }
            shift += 7;
            if (shift > 28) {
                throw new GoBinaryException(where + ": " + what + " length is not a valid varint");
            }
        }
        if (len > MAX_STRING || len > b.length - p) {
            throw new GoBinaryException(where + ": " + what + " of " + len + " bytes runs past the end (" + (b.length - p) + " left)");
        }
        pos[0] = p + (int) len;
        return new String(b, p, (int) len, StandardCharsets.UTF_8);
    }

    private static String pointedString(BinaryImage img, byte[] b, int at, int ptrSize, String where, String what)
            throws GoBinaryException {
        if (at + ptrSize > b.length) {
            throw new GoBinaryException(where + ": " + what + " pointer runs past the end");
        }
        long hdr = ptr(b, at, ptrSize);
        if (img.inZeroFill(hdr, 2 * ptrSize)) {
            return ""; // a string variable the program never set (e.g. modinfo of a GOPATH build) lies in .bss: empty
        }
        byte[] h = img.readVaddr(hdr, 2 * ptrSize, what + " string header");
        long data = ptr(h, 0, ptrSize);
        long len = ptr(h, ptrSize, ptrSize);
        if (len < 0 || len > MAX_STRING) {
            throw new GoBinaryException(where + ": " + what + " length " + len + " is implausible");
        }
        if (len == 0) {
            return "";
        }
        return new String(img.readVaddr(data, (int) len, what), StandardCharsets.UTF_8);
    }

    private static long ptr(byte[] b, int o, int size) {
        long v = 0;
        for (int i = size - 1; i >= 0; i--) {
            v = v << 8 | (b[o + i] & 0xff);
        }
        return v;
    }

    /** The "mod" line's path, else the "path" line's, from the modinfo text (sentinels around it are skipped). */
    private static Optional<String> modulePath(String modinfo) {
        String path = null;
        for (String line : modinfo.split("\n")) {
            String[] f = line.split("\t");
            if (f.length >= 2 && f[0].endsWith("mod")) {
                return Optional.of(f[1]);
            }
            if (f.length >= 2 && f[0].endsWith("path") && path == null) {
                path = f[1];
            }
        }
        return Optional.ofNullable(path);
    }

    private static String abbreviate(String s) {
        return s.length() > 40 ? s.substring(0, 40) + "..." : s;
    }

    /** {major, minor} of the version, e.g. {1, 19} for go1.19.8; empty for devel builds without one. */
    public Optional<int[]> majorMinor() {
        Matcher m = VERSION.matcher(version);
        if (!m.find()) {
            return Optional.empty();
        }
        try {
            return Optional.of(new int[] {Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2))});
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }
}
