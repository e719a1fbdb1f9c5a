package dev.loupe.unwinder.elf;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.ehframe.DebugFiles;
import dev.loupe.unwinder.ehframe.EhFrameException;
import dev.loupe.unwinder.fuzz.FuzzFiles;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

/**
 * Fuzz target for {@link ElfFile} as the symbolizer opens any mapped file: headers, the merged function symbols
 * of .symtab and .dynsym, the GNU and Go build ids from notes, sections by name; and {@link DebugFiles#find}
 * (build-id note, .gnu_debuglink). The input (after a flags byte) is written to a scratch file and read with
 * {@link ElfFile#open}, {@link ElfFile#buildIdOf} and, for comparison, {@link ElfFile#parse} of the same bytes in
 * memory. {@link ElfException} (and {@link EhFrameException} from DebugFiles) is what bad input must give; an
 * IOException for the readable file, anything else escaping (the symbolizer would re-read the file on every
 * sample), symbols out of order or a lookup that misses its own symbol, a build id that is not hex, or file and
 * memory reads disagreeing is a finding.
 */
public final class ElfFileFuzzTarget {
    private static final HexFormat HEX = HexFormat.of();

    private ElfFileFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] data) {
        if (data.length == 0) {
            return;
        }
        int flags = data[0] & 0xff;
        byte[] image = java.util.Arrays.copyOfRange(data, 1, data.length);
        Path file = FuzzFiles.write("elf-file", image);
        long maxSymbolBytes = (flags & 1) != 0 ? 4096 : ElfFile.DEFAULT_MAX_SYMBOL_BYTES;
        try {
            ElfFile fromFile = null;
            String fileError = null;
            try {
                fromFile = ElfFile.open(file, maxSymbolBytes);
                check(fromFile, image.length);
            } catch (ElfException e) {
                fileError = message(e);
            }
            if ((flags & 1) == 0) {
                compareWithMemory(fromFile, fileError, image);
            }
            try {
                Optional<String> id = ElfFile.buildIdOf(file);
                if (fromFile != null && !id.equals(fromFile.anyBuildId())) {
                    throw new IllegalStateException("buildIdOf " + id + ", open " + fromFile.anyBuildId());
                }
            } catch (ElfException e) {
                if (fromFile != null) {
                    throw new IllegalStateException("buildIdOf failed on a file open read: " + e.getMessage(), e);
                }
                message(e);
            }
            try {
                DebugFiles.find(file, FuzzFiles.scratch("no-debug-root"));
            } catch (EhFrameException e) {
                message(e);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("an IOException for a readable file", e);
        }
    }

    private static void compareWithMemory(ElfFile fromFile, String fileError, byte[] image) {
        ElfFile mem;
        try {
            mem = ElfFile.parse(FuzzFiles.scratch("elf-file").toString(), ByteBuffer.wrap(image));
        } catch (ElfException e) {
            if (fileError == null) {
                throw new IllegalStateException("the file reads, memory fails: " + e.getMessage(), e);
            }
            return;
        }
        if (fromFile == null) {
            throw new IllegalStateException("memory reads, the file fails: " + fileError);
        }
        SymbolTable a = fromFile.symbols();
        SymbolTable b = mem.symbols();
        if (a.size() != b.size() || !fromFile.anyBuildId().equals(mem.anyBuildId()) || fromFile.type() != mem.type()
                || !fromFile.loadSegments().equals(mem.loadSegments())) {
            throw new IllegalStateException("file and memory differ: " + a.size() + " / " + b.size() + " symbols, build ids "
                    + fromFile.anyBuildId() + " / " + mem.anyBuildId());
        }
        for (int i = 0; i < a.size(); i++) {
            if (a.start(i) != b.start(i) || a.symbolSize(i) != b.symbolSize(i) || !a.name(i).equals(b.name(i))) {
                throw new IllegalStateException("symbol " + i + " differs: " + a.name(i) + " / " + b.name(i));
            }
        }
    }

    private static void check(ElfFile elf, int length) throws ElfException {
        SymbolTable s = elf.symbols();
        for (int i = 0; i < s.size(); i++) {
            if (i > 0 && Long.compareUnsigned(s.start(i - 1), s.start(i)) >= 0) {
                throw new IllegalStateException("symbols out of order at " + i);
            }
            String name = s.name(i);
            if (name.indexOf('\0') >= 0) {
                throw new IllegalStateException("symbol " + i + " named '" + name + "'");
            }
            if ((i < 64 || i == s.size() - 1) && !name.equals(s.lookup(s.start(i)))) {
                throw new IllegalStateException("lookup of symbol " + i + " (" + name + ") found " + s.lookup(s.start(i)));
            }
        }
        elf.buildId().ifPresent(id -> {
            if (id.isEmpty() || id.length() > 128 || id.length() % 2 != 0 || !id.equals(HEX.formatHex(HEX.parseHex(id)))) {
                throw new IllegalStateException("build id '" + id + "'");
            }
        });
        elf.goBuildId().ifPresent(id -> {
            if (id.isEmpty() || id.length() > 256) {
                throw new IllegalStateException("Go build id of " + id.length() + " characters");
            }
        });
        for (LoadSegment l : elf.loadSegments()) {
            if (l.fileSize() > 0 && l.offset() >= 0 && elf.fileOffsetToVaddr(l.offset()) == -1) {
                throw new IllegalStateException("segment " + l + " does not map its own first byte");
            }
        }
        for (String section : List.of(".text", ".eh_frame", ".gnu_debuglink", ".note.gnu.build-id", ".symtab", ".gopclntab")) {
            Optional<ByteBuffer> b = elf.section(section);
            if (b.isPresent() && b.get().remaining() > length) {
                throw new IllegalStateException(section + " of " + b.get().remaining() + " bytes in a file of " + length);
            }
        }
    }

    /** Errors must say something: they become the log line naming a broken binary. */
    private static String message(Exception e) {
        if (e.getMessage() == null || e.getMessage().isBlank()) {
            throw new IllegalStateException("an error without a message", e);
        }
        return e.getMessage();
    }

    /**
     * Small real files: a shared library with .symtab and .dynsym (a static function between exported ones), it
     * stripped with a .gnu_debuglink and its debug file (SHT_NOBITS sections), and a program with compressed DWARF.
     */
    public static void writeSeeds(Path dir) throws Exception {
        Path work = Files.createTempDirectory("loupe-elf-seed");
        try {
            String[] small = {"-Wl,-z,max-page-size=0x40", "-Wl,-z,common-page-size=0x40", "-Wl,-z,separate-code", "-nostdlib"};
            List<String> lib = new java.util.ArrayList<>(List.of(TestPrograms.LIBRARY_FLAGS));
            lib.addAll(List.of(small));
            Path so = TestPrograms.compile(work, "lib", TestPrograms.STATIC_IN_LIBRARY, lib.toArray(String[]::new));
            seed(dir, "library", 0, so);
            Path debug = work.resolve("lib.debug");
            TestPrograms.splitDebugFile(so, debug, "--strip-unneeded");
            seed(dir, "library-stripped-debuglink", 0, so);
            seed(dir, "library-debug-file", 0, debug);
            seed(dir, "library-small-symbol-budget", 1, debug);
            Path gz = TestPrograms.compile(work, "gz", "void _start(void) { for (;;) { } }\n",
                    "-g", "-gz=zlib", "-static", "-nostdlib", "-no-pie", small[0], small[1], small[2]);
            seed(dir, "compressed-dwarf", 0, gz);
        } finally {
            try (var files = Files.list(work)) {
                for (Path p : files.toList()) {
                    Files.delete(p);
                }
            }
            Files.delete(work);
        }
    }

    private static void seed(Path dir, String name, int flags, Path elf) throws IOException {
        byte[] b = Files.readAllBytes(elf);
        byte[] in = new byte[b.length + 1];
        in[0] = (byte) flags;
        System.arraycopy(b, 0, in, 1, b.length);
        Files.write(dir.resolve("seed-" + name), in);
    }
}
