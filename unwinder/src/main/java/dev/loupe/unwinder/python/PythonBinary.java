package dev.loupe.unwinder.python;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfSource;
import dev.loupe.unwinder.elf.LoadSegment;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What this package needs from one CPython binary ({@code python3.X}, or {@code libpython3.X.so} for embedders), read
 * once per file and shared by every process that maps it: its version (read from the binary, {@link #version}; its
 * name only where the binary says nothing), the few symbols, and the
 * version's layout: a table for 3.9 to 3.12, the binary's own {@code _Py_DebugOffsets} for 3.13+ (the head of
 * {@code _PyRuntime}, statically initialized, so the file holds what a process's memory would), and the code objects
 * read from its initialized data ({@link StaticCodes}).
 */
record PythonBinary(int major, int minor, PythonSymbols symbols, PythonLayout layout, StaticCodes statics) {

    /**
     * Reads the binary {@code path} names (as a mapping does) from {@code file}.
     *
     * @throws PythonProcess.Unsupported no known layout for its version, or it lacks a symbol this package needs
     * @throws IOException it cannot be read now
     */
    static PythonBinary read(String path, Path file) throws IOException, PythonProcess.Unsupported {
        PythonSymbols syms;
        try {
            syms = PythonSymbols.read(file);
        } catch (ElfException e) {
            throw new PythonProcess.Unsupported(path + ": " + e.getMessage());
        }
        int[] v = version(file, syms);
        if (v == null) {
            v = PythonRuntime.version(path);
        }
        if (v == null) {
            throw new PythonProcess.Unsupported(path + " says no CPython version (no Py_Version, no single PY_VERSION"
                    + " string, not named as a CPython binary)");
        }
        Optional<PythonLayout> table = PythonLayout.forVersion(v[0], v[1]);
        if (table.isEmpty() && !(v[0] == 3 && DebugOffsets.FIELDS.containsKey(v[1]))) {
            throw new PythonProcess.Unsupported("CPython " + v[0] + "." + v[1] + " has no known layout");
        }
        long rt = syms.vaddr(PythonSymbols.RUNTIME);
        if (rt < 0 || syms.vaddr(PythonSymbols.CODE_TYPE) < 0 || syms.vaddr(PythonSymbols.EVAL) < 0
                || syms.size(PythonSymbols.EVAL) <= 0) {
            throw new PythonProcess.Unsupported(path + " lacks " + PythonSymbols.RUNTIME + ", " + PythonSymbols.CODE_TYPE
                    + " or " + PythonSymbols.EVAL);
        }
        PythonLayout layout = table.isPresent() ? table.get()
                : DebugOffsets.parse(initialBytes(file, syms, rt, 8 * DebugOffsets.words(v[1])), v[0], v[1]);
        return new PythonBinary(v[0], v[1], syms, layout, new StaticCodes(syms.loadSegments()));
    }

    /**
     * {major, minor} of the CPython the binary {@code file} is, from facts in it, whatever its name: the constant
     * {@code Py_Version} (3.11+, {@code PY_VERSION_HEX}: major in bits 24-31, minor in 16-23), else the version string
     * {@code Py_GetVersion} starts with ({@code PY_VERSION}, e.g. "3.9.2", {@link #versionString}); null when neither
     * says.
     */
    static int[] version(Path file, PythonSymbols syms) throws IOException, PythonProcess.Unsupported {
        long at = syms.vaddr(PythonSymbols.VERSION);
        if (at >= 0) {
            int hex = initialBytes(file, syms, at, 4).getInt(0);
            return new int[] {hex >>> 24, (hex >>> 16) & 0xff};
        }
        long size = Files.size(file);
        if (size > MAX_SCAN_BYTES) {
            return null;
        }
        return versionString(Files.readAllBytes(file));
    }

    /** Binaries larger than this are not searched for a version string (Debian's python3.9 is 5 MB). */
    static final long MAX_SCAN_BYTES = 64L << 20;

    private static final Pattern PY_VERSION = Pattern.compile("\\x003\\.(\\d{1,2})\\.\\d{1,2}(?:(?:a|b|rc)\\d{1,2})?\\+?\\x00");

    /**
     * The CPython 3 version a binary's bytes hold as {@code PY_VERSION}, a string of its own ("3.9.2", "3.10.0rc2+"), or
     * null unless exactly one minor version is found. Every CPython 3 also holds "3.2.0", the Unicode database version
     * {@code unicodedata.ucd_3_2_0} keeps for IDNA, so minor versions below 3 are no interpreter's.
     */
    static int[] versionString(byte[] bytes) {
        Matcher m = PY_VERSION.matcher(new String(bytes, StandardCharsets.ISO_8859_1));
        int minor = -1;
        for (int from = 0; m.find(from); from = m.end() - 1) {
            int found = Integer.parseInt(m.group(1));
            if (found < 3) {
                continue;
            }
            if (minor >= 0 && minor != found) {
                return null;
            }
            minor = found;
        }
        return minor < 0 ? null : new int[] {3, minor};
    }

    /** {@code length} bytes the file initializes at virtual address {@code vaddr} (in a segment's file part). */
    private static ByteBuffer initialBytes(Path file, PythonSymbols syms, long vaddr, int length)
            throws IOException, PythonProcess.Unsupported {
        for (LoadSegment s : syms.loadSegments()) {
            if (vaddr >= s.vaddr() && vaddr + length <= s.vaddr() + s.fileSize()) {
                try (ElfSource src = ElfSource.open(file)) {
                    return ByteBuffer.wrap(src.bytes(s.offset() + (vaddr - s.vaddr()), length, PythonSymbols.RUNTIME))
                            .order(ByteOrder.LITTLE_ENDIAN);
                } catch (ElfException e) {
                    throw new PythonProcess.Unsupported(file + ": " + e.getMessage());
                }
            }
        }
        throw new PythonProcess.Unsupported(PythonSymbols.RUNTIME + " at 0x" + Long.toHexString(vaddr)
                + " is not initialized from the file");
    }

    long runtimeVaddr() {
        return symbols.vaddr(PythonSymbols.RUNTIME);
    }

    long codeTypeVaddr() {
        return symbols.vaddr(PythonSymbols.CODE_TYPE);
    }

    long evalLow() {
        return symbols.vaddr(PythonSymbols.EVAL);
    }

    long evalHigh() {
        return evalLow() + symbols.size(PythonSymbols.EVAL);
    }
}
