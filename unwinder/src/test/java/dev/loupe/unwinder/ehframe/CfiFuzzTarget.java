package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfFile;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * The fuzz target (Jazzer's {@code fuzzerTestOneInput} convention) for the ELF section reader, the
 * .eh_frame/.debug_frame parser and interpreter, the table compiler and .eh_frame_hdr: the first byte
 * picks the parser, the rest is its input. Typed exceptions ({@link EhFrameException}, {@link ElfException})
 * are the expected outcome of bad input; anything else escaping, a table that breaks the kernel's lookup
 * invariants ({@link UnwindTable#verify}), a hang (Jazzer's timeout) or running out of memory is a finding.
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
