package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.elf.SectionHeader;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * The PC ranges of a file's {@code .eh_frame} FDEs, sorted: where the compiler says each function, or each part of one
 * it moved apart (gcc's {@code .cold} blocks), begins and ends. Entries that cannot be read are left out.
 */
public final class FdeRanges {
    private final long[] begins;
    private final long[] ends;

    private FdeRanges(long[] begins, long[] ends) {
        this.begins = begins;
        this.ends = ends;
    }

    public static FdeRanges read(Path file) throws EhFrameException, IOException {
        ElfSections elf = ElfSections.read(file);
        SectionHeader eh = elf.find(".eh_frame");
        List<long[]> out = new ArrayList<>();
        if (eh != null) {
            CfiSection sec = new CfiSection(elf.name(), elf.contents(eh), true, eh.addr());
            sec.scan(new CfiSection.Visitor() {
                @Override
                public void fde(CfiSection.Fde fde) {
                    if (Long.compareUnsigned(fde.pcBegin(), fde.pcEnd()) < 0) {
                        out.add(new long[] {fde.pcBegin(), fde.pcEnd()});
                    }
                }

                @Override
                public void skipped(int offset, EhFrameException problem) {}
            });
        }
        out.sort(Comparator.comparingLong(r -> r[0]));
        return new FdeRanges(out.stream().mapToLong(r -> r[0]).toArray(), out.stream().mapToLong(r -> r[1]).toArray());
    }

    /** {begin, end} of the FDE that covers {@code pc}, or null. */
    public long[] covering(long pc) {
        int i = Arrays.binarySearch(begins, pc);
        if (i < 0) {
            i = -i - 2;
        }
        return i >= 0 && pc < ends[i] ? new long[] {begins[i], ends[i]} : null;
    }

    /**
     * The largest range of [{@code from}, {@code to}) that no FDE covers, as {begin, end}, or null when it is all
     * covered: code the compiler described none of (a binary's hand-written or generated code, e.g. V8's embedded
     * builtins).
     */
    public long[] largestGap(long from, long to) {
        long best = 0;
        long[] out = null;
        long at = from;
        for (int i = 0; i <= begins.length; i++) {
            long next = i < begins.length ? Math.min(Math.max(begins[i], from), to) : to;
            if (next - at > best) {
                best = next - at;
                out = new long[] {at, next};
            }
            if (i < begins.length) {
                at = Math.max(at, Math.min(ends[i], to));
            }
        }
        return out;
    }
}
