package dev.loupe.unwinder.golang;

import dev.loupe.unwinder.fuzz.FuzzFiles;
import dev.loupe.unwinder.fuzz.FuzzInput;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Fuzz target for the Go readers as the agent calls them, on a whole file: a process's executable is any user's
 * file. The input (after a pattern choice: "*", "main.*", "main.main" or a string of its own) is written to a
 * scratch file, then read by {@link GoPclntab#read} (a section, or a magic search when there are no section
 * headers; what {@link GoSymbolSource#symbols} returns), {@link GoBuildInfo#read} (inline or pointer form),
 * {@link GoRuntimeOffsets#read} (DWARF, the version table) and {@link FunctionResolver#resolve} (symbols, then each function's
 * code decoded for its returns). {@link GoBinaryException} and {@link FunctionResolutionException} are the
 * expected errors; an IOException (the file is there and readable), anything else escaping, or a result that
 * contradicts itself (returns outside their function, out of order, more matches than the limit) is a finding.
 */
public final class GoBinaryFuzzTarget {
    private static final int MAX_MATCHES = 16;

    private GoBinaryFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        int choice = in.u8() & 3;
        String pattern = switch (choice) {
            case 0 -> "*";
            case 1 -> "main.*";
            case 2 -> "main.main";
            default -> in.string(64);
        };
        byte[] elf = in.rest();
        if (choice == 3 && pattern.chars().filter(c -> c == '*').count() <= 4) { // the regex's own time stays small
            sameAsRegex(pattern, elf);
        }
        Path file = FuzzFiles.write("go-binary", elf);
        try {
            pclntab(file, elf.length);
            buildInfo(file);
            offsets(file);
            if (!pattern.isEmpty()) {
                resolve(file, pattern);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("an IOException for a readable file", e);
        }
    }

    private static void pclntab(Path file, int length) throws IOException {
        try {
            GoPclntab.read(file).ifPresent(t -> GoPclntabFuzzTarget.check(t, length));
        } catch (GoBinaryException e) {
            named(e);
        }
    }

    private static void buildInfo(Path file) throws IOException {
        try {
            Optional<GoBuildInfo> b = GoBuildInfo.read(file);
            if (b.isPresent() && !b.get().version().startsWith("go") && !b.get().version().startsWith("devel")) {
                throw new IllegalStateException("version " + b.get().version());
            }
        } catch (GoBinaryException e) {
            named(e);
        }
    }

    private static void offsets(Path file) throws IOException {
        try {
            Optional<GoRuntimeOffsets> o = GoRuntimeOffsets.read(file);
            if (o.isPresent() && o.get().goidOffset() < 0) {
                throw new IllegalStateException("goid offset " + o.get());
            }
        } catch (GoBinaryException e) {
            named(e);
        }
    }

    private static void resolve(Path file, String pattern) throws IOException {
        FunctionResolver.Resolution r;
        try {
            r = FunctionResolver.resolve(file, pattern, MAX_MATCHES);
        } catch (GoBinaryException | FunctionResolutionException e) {
            named(e);
            return;
        }
        if (r.functions().isEmpty() || r.functions().size() > MAX_MATCHES) {
            throw new IllegalStateException(r.functions().size() + " matches of '" + pattern + "'");
        }
        for (FunctionResolver.ProbeTarget t : r.functions()) {
            long[] rets = t.returnFileOffsets();
            for (int k = 0; k < rets.length; k++) {
                if (rets[k] < t.entryFileOffset() || rets[k] - t.entryFileOffset() >= t.size() || (k > 0 && rets[k] <= rets[k - 1])) {
                    throw new IllegalStateException("return " + k + " at file offset " + rets[k] + " of " + t);
                }
            }
            if (t.problem().isEmpty() && rets.length == 0) {
                throw new IllegalStateException("no returns and no problem: " + t);
            }
        }
    }

    /**
     * {@link FunctionResolver.Glob} against the regular expression globs were matched with before (linear time
     * mattered, not meaning): on short names made from the pattern and the input's first bytes.
     */
    private static void sameAsRegex(String pattern, byte[] elf) {
        StringBuilder re = new StringBuilder();
        StringBuilder lit = new StringBuilder();
        for (int i = 0; i < pattern.length(); i++) {
            char c = pattern.charAt(i);
            if (c == '\\' && i + 1 < pattern.length()) {
                lit.append(pattern.charAt(++i));
            } else if (c == '*' || c == '?') {
                re.append(java.util.regex.Pattern.quote(lit.toString())).append(c == '*' ? ".*" : ".");
                lit.setLength(0);
            } else {
                lit.append(c);
            }
        }
        re.append(java.util.regex.Pattern.quote(lit.toString()));
        java.util.regex.Pattern regex = java.util.regex.Pattern.compile(re.toString(), java.util.regex.Pattern.DOTALL);
        FunctionResolver.Glob glob = FunctionResolver.Glob.of(pattern);
        String head = new String(elf, 0, Math.min(elf.length, 48), StandardCharsets.UTF_8);
        for (String name : new String[] {pattern, pattern.replace("*", ""), pattern.replace("*", head), head, pattern.replace("?", "\u00e9")}) {
            if (name.length() <= 200 && regex.matcher(name).matches() != glob.matches(name)) {
                throw new IllegalStateException("'" + pattern + "' on '" + name + "': the regex says " + regex.matcher(name).matches());
            }
        }
    }

    /** Errors name the file: the agent's log must say which binary. */
    private static void named(Exception e) {
        if (e.getMessage() == null || !e.getMessage().contains("go-binary")) {
            throw new IllegalStateException("an error that does not name the file: " + e.getMessage(), e);
        }
    }

    /** ELF files of about 2 KB with Go's sections (GoSeeds#elfs): inline and pointer build info, each in three strip levels. */
    public static void writeSeeds(Path dir) throws Exception {
        Path work = Files.createTempDirectory("loupe-go-binaries");
        try {
            int i = 0;
            for (boolean pointers : new boolean[] {false, true}) {
                for (Path p : GoSeeds.elfs(work, pointers ? "old" : "new", pointers)) {
                    byte[] elf = Files.readAllBytes(p);
                    byte[] in = new byte[elf.length + 1];
                    in[0] = (byte) (i++ % 3);
                    System.arraycopy(elf, 0, in, 1, elf.length);
                    Files.write(dir.resolve("seed-" + p.getFileName()), in);
                    Files.delete(p);
                }
            }
            byte[] glob = "\u0003\u0009main.m?in".getBytes(StandardCharsets.ISO_8859_1);
            byte[] elf = Files.readAllBytes(dir.resolve("seed-new"));
            byte[] in = new byte[glob.length + elf.length - 1];
            System.arraycopy(glob, 0, in, 0, glob.length);
            System.arraycopy(elf, 1, in, glob.length, elf.length - 1);
            Files.write(dir.resolve("seed-new-glob"), in);
        } finally {
            Files.delete(work);
        }
    }
}
