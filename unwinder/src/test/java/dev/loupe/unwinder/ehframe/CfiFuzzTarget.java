package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.TestPrograms;
import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfFile;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * The fuzz target (Jazzer's {@code fuzzerTestOneInput} convention) for the ELF section reader, the
 * .eh_frame/.debug_frame parser and interpreter, the table compiler and .eh_frame_hdr: the first byte
 * picks the parser, the rest is its input. Typed exceptions ({@link EhFrameException}, {@link ElfException})
 * are the expected outcome of bad input; anything else escaping, a table that breaks the kernel's lookup
 * invariants ({@link UnwindTable#verify}), a hang (Jazzer's timeout) or running out of memory is a finding.
 * Kept inputs: real sections of a small C program ({@code src/test/resources/fuzz/CfiFuzzTarget}); {@link #writeSeeds}
 * adds the whole program, compiled at run time.
 */
public final class CfiFuzzTarget {
    private CfiFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] input) {
        if (input.length == 0) {
            return;
        }
        byte[] data = Arrays.copyOfRange(input, 1, input.length);
        try {
            switch (input[0] & 3) {
                case 0 -> check(UnwindTableBuilder.buildFromSection("fuzz.eh_frame", data, true, 0x401000));
                case 1 -> check(UnwindTableBuilder.buildFromSection("fuzz.debug_frame", data, false, 0));
                case 2 -> {
                    try {
                        check(UnwindTableBuilder.build("fuzz.elf", ByteBuffer.wrap(data)));
                    } catch (EhFrameException e) {
                        // expected for bad input
                    }
                    ElfFile.parse("fuzz.elf", ByteBuffer.wrap(data)).section(".eh_frame");
                }
                default -> {
                    EhFrameHdr hdr = EhFrameHdr.parse("fuzz.eh_frame_hdr", data, 0x2000);
                    for (long pc : new long[] {0, 0x2000, 0x401000, -1}) {
                        hdr.find(pc);
                    }
                }
            }
        } catch (EhFrameException | ElfException e) {
            // the typed errors bad input must give
        }
    }

    /** Seeds: a small program as a whole ELF and its .eh_frame, .debug_frame and .eh_frame_hdr sections. */
    public static void writeSeeds(Path dir) throws Exception {
        Path work = Files.createTempDirectory("loupe-cfi-seed");
        Path prog = TestPrograms.compile(work, "seed", """
                #include <stdio.h>
                #include <stdlib.h>
                __attribute__((noinline)) int f(int n) { char *p = __builtin_alloca(n + 8); p[0] = n; return n ? f(n - 1) + p[0] : 0; }
                int main(int argc, char **argv) { printf("%d\\n", f(argc)); return 0; }
                """, "-g", "-fomit-frame-pointer");
        byte[] elf = Files.readAllBytes(prog);
        ElfSections s = ElfSections.read(prog);
        String[] names = {".eh_frame", ".debug_frame", null, ".eh_frame_hdr"};
        for (int mode = 0; mode < names.length; mode++) {
            if (names[mode] != null && s.find(names[mode]) != null) {
                write(dir, names[mode].substring(1), mode, s.contents(s.find(names[mode])));
            }
        }
        write(dir, "elf", 2, elf);
        try (var made = Files.list(work)) {
            for (Path p : made.toList()) {
                Files.delete(p);
            }
        }
        Files.delete(work);
    }

    private static void write(Path dir, String name, int mode, byte[] data) throws Exception {
        byte[] in = new byte[data.length + 1];
        in[0] = (byte) mode;
        System.arraycopy(data, 0, in, 1, data.length);
        Files.write(dir.resolve("seed-" + name), in);
    }

    private static void check(UnwindTable t) {
        t.verify();
        long base = t.pcBase();
        for (long pc : new long[] {0, base, base + 1, t.pcEnd() - 1, t.pcEnd(), -1, base + 0x12345}) {
            long r = t.lookup(pc);
            if (r != UnwindRule.NOT_COVERED && UnwindRule.kind(r) > UnwindRule.KIND_STOP) {
                throw new IllegalStateException("lookup returned a bad rule " + Long.toHexString(r));
            }
        }
    }
}
