package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.elf.SectionHeader;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.zip.CRC32;

/**
 * Finds a binary's separate debug file (which may hold the .debug_frame the binary was stripped of), the
 * way gdb does: {@code ROOT/.build-id/xx/yyyy.debug} by GNU build id, then the {@code .gnu_debuglink}
 * name in the binary's directory, its {@code .debug/} subdirectory and {@code ROOT/<dir>/}; a debuglink
 * candidate must match the link's CRC32.
 */
public final class DebugFiles {
    /** Where distributions install debug files. */
    public static final Path DEFAULT_ROOT = Path.of("/usr/lib/debug");

    private DebugFiles() {}

    /** The debug file for {@code binary} under {@code root}, if one exists. */
    public static Optional<Path> find(Path binary, Path root) throws EhFrameException, IOException {
        ElfSections elf = ElfSections.read(binary);
        SectionHeader note = elf.find(".note.gnu.build-id");
        if (note != null) {
            String id = buildId(elf.contents(note));
            if (id != null && id.length() > 2) {
                Path p = root.resolve(".build-id").resolve(id.substring(0, 2)).resolve(id.substring(2) + ".debug");
                if (Files.isRegularFile(p)) {
                    return Optional.of(p);
                }
            }
        }
        SectionHeader link = elf.find(".gnu_debuglink");
        if (link == null) {
            return Optional.empty();
        }
        byte[] l = elf.contents(link);
        int nul = 0;
        while (nul < l.length && l[nul] != 0) {
            nul++;
        }
        if (nul == 0 || nul == l.length) {
            return Optional.empty();
        }
        String name = new String(l, 0, nul, java.nio.charset.StandardCharsets.UTF_8);
        if (name.contains("/")) {
            return Optional.empty();
        }
        int crcAt = (nul + 4) & ~3;
        if (crcAt + 4 > l.length) {
            return Optional.empty();
        }
        long crc = ElfSections.u32(l, crcAt) & 0xffffffffL;
        Path dir = binary.toAbsolutePath().getParent();
        List<Path> candidates = new ArrayList<>(List.of(dir.resolve(name), dir.resolve(".debug").resolve(name)));
        candidates.add(root.resolve(dir.getRoot().relativize(dir)).resolve(name));
        for (Path c : candidates) {
            if (Files.isRegularFile(c) && !Files.isSameFile(c, binary) && crc32(c) == crc) {
                return Optional.of(c);
            }
        }
        return Optional.empty();
    }

    /** The build id from a GNU build-id note section, as lower-case hex. */
    private static String buildId(byte[] n) {
        if (n.length < 16) {
            return null;
        }
        int namesz = ElfSections.u32(n, 0);
        int descsz = ElfSections.u32(n, 4);
        int type = ElfSections.u32(n, 8);
        int desc = 12 + ((namesz + 3) & ~3);
        if (type != 3 || namesz != 4 || descsz <= 0 || descsz > 64 || desc + descsz > n.length) {
            return null;
        }
        return HexFormat.of().formatHex(n, desc, desc + descsz);
    }

    private static long crc32(Path p) throws IOException {
        CRC32 crc = new CRC32();
        byte[] buf = new byte[1 << 16];
        try (InputStream in = Files.newInputStream(p)) {
            for (int n; (n = in.read(buf)) > 0; ) {
                crc.update(buf, 0, n);
            }
        }
        return crc.getValue();
    }
}
