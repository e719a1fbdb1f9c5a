package dev.loupe.unwinder.dwarf;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfFile;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The supplementary debug file a DWARF file's references point into: dwz's alternate file, named by
 * {@code .gnu_debugaltlink} (file name, NUL, the alternate file's build id; Debian's -dbgsym packages ship it as
 * {@code /usr/lib/debug/.dwz/<triplet>/<package>.debug}) or DWARF 5 {@code .debug_sup} (version 5, is_supplementary 0,
 * file name, checksum length and bytes, the same checksum in the supplementary file's own {@code .debug_sup}). Found
 * as gdb finds it: an absolute name in the process's root then the host's, a relative one next to the file naming it,
 * then {@code /usr/lib/debug/.build-id/xx/rest.debug} by build id; a candidate is taken only when its build id (or
 * .debug_sup checksum) is the one the link names.
 */
public final class SupplementaryFile {
    private static final String DEBUG_DIR = "usr/lib/debug";

    /** The link: the name it gives, and the build id or checksum the file must have (hex; empty: not checked). */
    public record Link(String name, String id, boolean debugSup) {}

    private SupplementaryFile() {}

    /** The link {@code elf} carries, null if it carries none; a malformed one is a {@link DwarfException}. */
    public static Link link(String file, ElfFile elf) throws DwarfException, ElfException {
        ByteBuffer alt = elf.hasSection(".gnu_debugaltlink") ? elf.section(".gnu_debugaltlink").orElse(null) : null;
        if (alt != null) {
            Cursor c = new Cursor(file + ": .gnu_debugaltlink", alt, 0, alt.limit());
            String name = c.cstringAt(0);
            byte[] id = new byte[(int) Math.max(0, alt.limit() - name.getBytes(StandardCharsets.UTF_8).length - 1)];
            alt.get(alt.limit() - id.length, id);
            return checked(file, ".gnu_debugaltlink", new Link(name, HexFormat.of().formatHex(id), false));
        }
        ByteBuffer sup = elf.hasSection(".debug_sup") ? elf.section(".debug_sup").orElse(null) : null;
        if (sup == null) {
            return null;
        }
        Cursor c = new Cursor(file + ": .debug_sup", sup, 0, sup.limit());
        int version = c.u16();
        if (version != 5) {
            throw c.error("version " + version + " (5 is read)");
        }
        if (c.u8() != 0) {
            return null; // this is a supplementary file itself
        }
        String name = c.cstringAt(c.pos);
        c.skipCString();
        return checked(file, ".debug_sup", new Link(name, checksum(c), true));
    }

    private static String checksum(Cursor c) throws DwarfException {
        long n = c.uleb();
        if (n > 64) {
            throw c.error("checksum of " + Long.toUnsignedString(n) + " bytes (at most 64 are read)");
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            sb.append(String.format("%02x", c.u8()));
        }
        return sb.toString();
    }

    private static Link checked(String file, String section, Link l) throws DwarfException {
        if (l.name().isEmpty() || l.name().indexOf('\0') >= 0) {
            throw new DwarfException(file + ": " + section + " names no file");
        }
        return l;
    }

    /**
     * The supplementary file {@code link} names for {@code dwarfFile} (as it can be opened now), looked for in
     * {@code root} (the process's root file system) first; null if none that matches exists.
     */
    public static Path find(Path dwarfFile, Link link, Path root) throws IOException {
        List<Path> roots = root.equals(Path.of("/")) ? List.of(root) : List.of(root, Path.of("/"));
        Set<Path> candidates = new LinkedHashSet<>();
        if (link.name().startsWith("/")) {
            for (Path r : roots) {
                candidates.add(r.resolve(link.name().substring(1)));
            }
        } else if (dwarfFile.getParent() != null) {
            candidates.add(dwarfFile.getParent().resolve(link.name()));
        }
        if (!link.debugSup() && link.id().length() > 2) {
            for (Path r : roots) {
                candidates.add(r.resolve(DEBUG_DIR + "/.build-id/" + link.id().substring(0, 2) + "/" + link.id().substring(2)
                        + ".debug"));
            }
        }
        for (Path c : new ArrayList<>(candidates)) {
            if (Files.isRegularFile(c) && matches(c, link)) {
                return c;
            }
        }
        return null;
    }

    private static boolean matches(Path candidate, Link link) {
        if (link.id().isEmpty()) {
            return true;
        }
        try {
            if (!link.debugSup()) {
                return link.id().equals(ElfFile.buildIdOf(candidate).orElse(null));
            }
            ElfFile elf = ElfFile.openWithoutSymbols(candidate);
            ByteBuffer sup = elf.hasSection(".debug_sup") ? elf.section(".debug_sup").orElse(null) : null;
            if (sup == null) {
                return false;
            }
            Cursor c = new Cursor(candidate + ": .debug_sup", sup, 0, sup.limit());
            if (c.u16() != 5 || c.u8() != 1) {
                return false;
            }
            c.skipCString();
            return link.id().equals(checksum(c));
        } catch (DwarfException | ElfException | IOException | RuntimeException e) {
            return false;
        }
    }
}
