package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.dwarf.DwarfLineTable;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.elf.SymbolTable;
import dev.loupe.unwinder.golang.GoLineTable;
import dev.loupe.unwinder.lines.LineTable;

import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.zip.CRC32;

/**
 * The line table of a mapped binary: Go's pclntab; else DWARF {@code .debug_line} from the binary itself or from its
 * separate debug file, found as gdb finds it: {@code /usr/lib/debug/.build-id/xx/rest.debug}, then the
 * {@code .gnu_debuglink} name next to the binary, in its {@code .debug} directory and under {@code /usr/lib/debug} —
 * each inside the process's root file system first (containers), then the host's. Never throws: no table means no lines.
 */
final class LineTables {
    private static final System.Logger LOG = System.getLogger(ProcSymbolizer.class.getName());
    private static final String DEBUG_DIR = "usr/lib/debug";

    private LineTables() {}

    /**
     * @param file        the binary as it can be opened now (its sections are mapped from it)
     * @param processRoot the process's root ({@code /proc/PID/root})
     * @param mappedPath  the binary's path as the process maps it
     * @param symbols     the function names frames get (DWARF lines are attached to them)
     */
    static LineTable open(Path file, ElfFile elf, Path processRoot, String mappedPath, String buildId, SymbolTable symbols) {
        try {
            if (elf.hasSection(".gopclntab") || elf.hasSection(".data.rel.ro.gopclntab")) {
                GoLineTable go = GoLineTable.open(file, elf);
                return go != null ? go : LineTable.NONE;
            }
            if (elf.hasSection(".debug_line")) {
                DwarfLineTable own = DwarfLineTable.open(file, elf, symbols, processRoot);
                if (own != null) {
                    return own;
                }
            }
            for (Path debug : debugFiles(file, elf, processRoot, mappedPath, buildId)) {
                ElfFile d = ElfFile.openWithoutSymbols(debug);
                DwarfLineTable t = DwarfLineTable.open(debug, d, symbols, processRoot, file);
                if (t != null) {
                    return t;
                }
            }
        } catch (Exception e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "no source lines for " + mappedPath + ": " + e.getMessage());
        }
        return LineTable.NONE;
    }

    /** Existing debug files for the binary, in gdb's order, each checked to belong to it (build id, else CRC). */
    static List<Path> debugFiles(Path file, ElfFile elf, Path processRoot, String mappedPath, String buildId) throws Exception {
        List<Path> roots = List.of(processRoot, Path.of("/"));
        Set<Path> out = new LinkedHashSet<>();
        if (buildId != null && buildId.length() > 2) {
            String rel = DEBUG_DIR + "/.build-id/" + buildId.substring(0, 2) + "/" + buildId.substring(2) + ".debug";
            for (Path root : roots) {
                Path p = root.resolve(rel);
                if (Files.isRegularFile(p) && buildId.equals(ElfFile.buildIdOf(p).orElse(null))) {
                    out.add(p);
                }
            }
        }
        ByteBuffer link = elf.hasSection(".gnu_debuglink") ? elf.section(".gnu_debuglink").orElse(null) : null;
        if (link != null && mappedPath.startsWith("/")) {
            byte[] b = new byte[link.remaining()];
            link.get(0, b);
            int nul = 0;
            while (nul < b.length && b[nul] != 0) {
                nul++;
            }
            int crcAt = (nul + 4) & ~3;
            if (nul > 0 && nul < b.length && crcAt + 4 <= b.length) {
                String name = new String(b, 0, nul, StandardCharsets.UTF_8);
                long crc = Integer.toUnsignedLong(ByteBuffer.wrap(b, crcAt, 4).order(ByteOrder.LITTLE_ENDIAN).getInt());
                String dir = Path.of(mappedPath).getParent().toString().substring(1); // relative to a root
                if (!name.contains("/")) {
                    List<Path> candidates = new ArrayList<>();
                    for (Path root : roots) {
                        candidates.add(root.resolve(dir).resolve(name));
                        candidates.add(root.resolve(dir).resolve(".debug").resolve(name));
                        candidates.add(root.resolve(DEBUG_DIR).resolve(dir).resolve(name));
                    }
                    for (Path c : candidates) {
                        if (Files.isRegularFile(c) && !Files.isSameFile(c, file) && belongs(c, buildId, crc)) {
                            out.add(c);
                        }
                    }
                }
            }
        }
        return new ArrayList<>(out);
    }

    /** The same build id when both have one (no need to read the file), else the debuglink's CRC32 of the whole file. */
    private static boolean belongs(Path debug, String buildId, long crc) throws Exception {
        String id = ElfFile.buildIdOf(debug).orElse(null);
        if (buildId != null && id != null) {
            return buildId.equals(id);
        }
        CRC32 c = new CRC32();
        byte[] buf = new byte[1 << 16];
        try (InputStream in = Files.newInputStream(debug)) {
            for (int n; (n = in.read(buf)) > 0; ) {
                c.update(buf, 0, n);
            }
        }
        return c.getValue() == crc;
    }
}
