package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.elf.SymbolTable;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Turns a binary and a function name or glob into uprobe targets: each function's entry and the file
 * offsets of each of its return instructions (the uprobe API takes file offsets, so PIE and non-PIE are
 * the same). Symbols come from {@code .symtab} when present, else from {@code .gopclntab} (stripped Go),
 * else from {@code .dynsym} (stripped C); sizes are the symbols' st_size, or for pclntab the next
 * function's entry.
 *
 * <p>Patterns: a name that exists exactly is that function alone (Go names contain {@code *}, as in
 * {@code net/http.(*conn).serve}); otherwise {@code *} matches any run of characters and {@code ?} one,
 * and a backslash makes the next character literal.
 */
public final class FunctionResolver {
    public static final int DEFAULT_MAX_MATCHES = 1000;
    /** Larger functions are not decoded (no real function is; a bogus size must not cost memory). */
    static final int MAX_FUNCTION_BYTES = 16 << 20;

    /** Where the names came from. */
    public enum SymbolSource {
        SYMTAB,
        GOPCLNTAB,
        DYNSYM
    }

    /**
     * One function to probe.
     *
     * @param name              its symbol name
     * @param entryAddress      link-time virtual address of the entry
     * @param size              bytes decoded (st_size, or up to the next function for pclntab)
     * @param entryFileOffset   file offset of the entry (uprobe offset)
     * @param returnFileOffsets file offsets of each return instruction, ascending
     * @param problem           why the returns cannot be probed (no RET: tail jumps only; undecodable)
     */
    public record ProbeTarget(String name, long entryAddress, long size, long entryFileOffset, long[] returnFileOffsets,
                              Optional<String> problem) {
        public ProbeTarget {
            returnFileOffsets = returnFileOffsets.clone();
        }

        @Override
        public long[] returnFileOffsets() {
            return returnFileOffsets.clone();
        }

        @Override
        public String toString() {
            return name + "@0x" + Long.toHexString(entryAddress) + " (file 0x" + Long.toHexString(entryFileOffset) + ", "
                    + returnFileOffsets.length + " returns" + problem.map(p -> ", " + p).orElse("") + ")";
        }
    }

    /**
     * @param go whether the binary is a Go binary (has a pclntab): returns must be probed, not uretprobes
     */
    public record Resolution(Path binary, String pattern, SymbolSource source, boolean go, List<ProbeTarget> functions) {}

    private FunctionResolver() {}

    /** {@link #resolve(Path, String, int)} with at most {@link #DEFAULT_MAX_MATCHES} matches. */
    public static Resolution resolve(Path binary, String pattern) throws FunctionResolutionException, GoBinaryException, IOException {
        return resolve(binary, pattern, DEFAULT_MAX_MATCHES);
    }

    /**
     * The functions of {@code binary} named by {@code pattern}. No match, or more than {@code maxMatches},
     * is a {@link FunctionResolutionException} naming the count.
     */
    public static Resolution resolve(Path binary, String pattern, int maxMatches)
            throws FunctionResolutionException, GoBinaryException, IOException {
        if (pattern == null || pattern.isEmpty()) {
            throw new IllegalArgumentException("empty function pattern");
        }
        if (maxMatches < 1) {
            throw new IllegalArgumentException("maxMatches must be at least 1, got " + maxMatches);
        }
        BinaryImage img = BinaryImage.open(binary);
        ElfFile elf;
        try {
            elf = ElfFile.open(binary);
        } catch (ElfException e) {
            throw new GoBinaryException(e.getMessage(), e);
        }
        Optional<GoPclntab> pcln = GoPclntab.read(img);
        SymbolTable table;
        SymbolSource source;
        if (elf.hasSection(".symtab") && elf.symbols().size() > 0) {
            table = elf.symbols();
            source = SymbolSource.SYMTAB;
        } else if (pcln.isPresent()) {
            table = pcln.get().symbolTable();
            source = SymbolSource.GOPCLNTAB;
        } else {
            table = elf.symbols();
            source = SymbolSource.DYNSYM;
        }
        if (table.size() == 0) {
            throw new FunctionResolutionException(FunctionResolutionException.Reason.NO_SYMBOLS, 0,
                    binary + ": no function symbols (no .symtab, .gopclntab or .dynsym functions)");
        }
        int[] matches = match(table, pattern, maxMatches, binary, source);
        List<ProbeTarget> out = new ArrayList<>(matches.length);
        for (int i : matches) {
            out.add(target(img, table, i, pcln.orElse(null)));
        }
        return new Resolution(binary, pattern, source, pcln.isPresent(), List.copyOf(out));
    }

    private static int[] match(SymbolTable t, String pattern, int max, Path binary, SymbolSource source)
            throws FunctionResolutionException {
        String literal = unescape(pattern);
        for (int i = 0; i < t.size(); i++) {
            if (t.name(i).equals(pattern) || t.name(i).equals(literal)) {
                return new int[] {i};
            }
        }
        Glob glob = Glob.of(pattern);
        int[] found = new int[16];
        int n = 0;
        for (int i = 0; i < t.size(); i++) {
            if (glob.matches(t.name(i))) {
                if (n == found.length) {
                    found = Arrays.copyOf(found, n * 2);
                }
                found[n++] = i;
            }
        }
        if (n == 0) {
            throw new FunctionResolutionException(FunctionResolutionException.Reason.NO_MATCH, 0,
                    binary + ": no function matches '" + pattern + "' (" + t.size() + " functions from " + source + ")");
        }
        if (n > max) {
            throw new FunctionResolutionException(FunctionResolutionException.Reason.TOO_MANY, n,
                    binary + ": '" + pattern + "' matches " + n + " functions, more than the limit of " + max
                            + "; narrow the pattern or raise the limit");
        }
        return Arrays.copyOf(found, n);
    }

    /**
     * A pattern with {@code *} (any run of characters), {@code ?} (one) and {@code \\} (the next character is
     * literal), matched without a regular expression: names are the binary's, which any user may have built, and
     * a regex of two or more {@code .*} backtracks polynomially over a long name ({@code *a*a*b} took 16 s on one
     * name of 4,000 characters). This matcher backs up only to the last {@code *}: at most the name's length
     * times the pattern's steps.
     */
    static final class Glob {
        private static final int STAR = -1;
        private static final int ONE = -2;
        /** Code points to match literally, or STAR / ONE. */
        private final int[] tokens;

        private Glob(int[] tokens) {
            this.tokens = tokens;
        }

        static Glob of(String glob) {
            int[] cps = glob.codePoints().toArray();
            int[] t = new int[cps.length];
            int n = 0;
            for (int i = 0; i < cps.length; i++) {
                int c = cps[i];
                if (c == '\\' && i + 1 < cps.length) {
                    t[n++] = cps[++i];
                } else {
                    t[n++] = c == '*' ? STAR : c == '?' ? ONE : c;
                }
            }
            return new Glob(java.util.Arrays.copyOf(t, n));
        }

        boolean matches(String name) {
            int[] s = name.codePoints().toArray();
            int i = 0;
            int j = 0;
            int star = -1; // the last * seen, and where in the name its run ends so far
            int mark = 0;
            while (i < s.length) {
                if (j < tokens.length && (tokens[j] == ONE || tokens[j] == s[i])) {
                    i++;
                    j++;
                } else if (j < tokens.length && tokens[j] == STAR) {
                    star = j++;
                    mark = i;
                } else if (star >= 0) {
                    j = star + 1; // the * takes one more character
                    i = ++mark;
                } else {
                    return false;
                }
            }
            while (j < tokens.length && tokens[j] == STAR) {
                j++;
            }
            return j == tokens.length;
        }
    }

    private static String unescape(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            b.append(c == '\\' && i + 1 < s.length() ? s.charAt(++i) : c);
        }
        return b.toString();
    }

    private static ProbeTarget target(BinaryImage img, SymbolTable t, int i, GoPclntab pcln) throws GoBinaryException {
        String name = t.name(i);
        long entry = t.start(i);
        long size = t.symbolSize(i);
        if (size == 0 && pcln != null) {
            size = pcln.lookup(entry).map(f -> f.end() - f.entry()).orElse(0L);
        }
        if (size == 0 && i + 1 < t.size()) {
            size = t.start(i + 1) - entry; // unknown size: up to the next symbol
        }
        long fileOffset = img.fileOffset(entry);
        if (fileOffset < 0) {
            throw new GoBinaryException(img.path() + ": " + name + " at 0x" + Long.toHexString(entry)
                    + " is not inside any PT_LOAD segment's file contents");
        }
        if (size <= 0 || size > MAX_FUNCTION_BYTES) {
            return new ProbeTarget(name, entry, size, fileOffset, new long[0],
                    Optional.of("size " + size + " is unknown or implausible: its returns cannot be found"));
        }
        byte[] code = img.readVaddr(entry, (int) size, "code of " + name);
        ReturnFinder.Returns r = ReturnFinder.find(code, 0, code.length);
        long[] rets = new long[r.returnOffsets().length];
        for (int k = 0; k < rets.length; k++) {
            rets[k] = fileOffset + r.returnOffsets()[k];
        }
        return new ProbeTarget(name, entry, size, fileOffset, rets, r.problem());
    }
}
