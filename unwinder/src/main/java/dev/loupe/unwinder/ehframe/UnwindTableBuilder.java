package dev.loupe.unwinder.ehframe;

import dev.loupe.unwinder.ehframe.EhFrameException.Problem;
import dev.loupe.unwinder.elf.SectionHeader;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * Builds an {@link UnwindTable} from an ELF file's {@code .eh_frame} (cross-checked against
 * {@code .eh_frame_hdr}) and {@code .debug_frame} (zlib-compressed or not).
 *
 * <p>.eh_frame is what the runtime itself unwinds with, so it wins: .debug_frame FDEs are used only for PC
 * ranges no .eh_frame FDE touches (e.g. code built with {@code -fno-asynchronous-unwind-tables -g}).
 * FDEs are ordered by start; where two overlap, the later start wins from there on (what a lookup through
 * .eh_frame_hdr does). One bad entry never fails the build: undecodable entries are skipped and counted,
 * an FDE whose program fails becomes one {@code stop(MALFORMED_FDE)} row over its range.
 */
public final class UnwindTableBuilder {
    private static final System.Logger LOG = System.getLogger(UnwindTableBuilder.class.getName());
    /** Pages a table may span (64 GiB of code). */
    static final int MAX_PAGES = 1 << 20;
    private static final int MAX_RULES = 1 << 16;
    private static final int KEPT_PROBLEMS = 8;

    private UnwindTableBuilder() {}

    /** Builds the table of a file. EhFrameException: the file itself is unreadable (not the CFI in it). */
    public static UnwindTable build(Path file) throws EhFrameException, IOException {
        return build(ElfSections.read(file));
    }

    /**
     * Builds the table of a file whose .debug_frame may live in a separate debug file (see
     * {@link DebugFiles}); the file's own .debug_frame, if any, is preferred. {@code debugFile} may be null.
     */
    public static UnwindTable build(Path file, Path debugFile) throws EhFrameException, IOException {
        ElfSections elf = ElfSections.read(file);
        if (debugFile == null || elf.find(".debug_frame") != null || elf.find(".zdebug_frame") != null) {
            return build(elf);
        }
        ElfSections debug;
        try {
            debug = ElfSections.read(debugFile);
        } catch (EhFrameException | IOException e) { // a broken debug file costs its .debug_frame, not the table
            LOG.log(System.Logger.Level.DEBUG, () -> file + ": debug file " + debugFile + " unreadable: " + e.getMessage());
            return build(elf);
        }
        return build(elf, debug);
    }

    /** Builds the table of an in-memory image, e.g. the vdso read from a process's {@code [vdso]} mapping. */
    public static UnwindTable build(String name, ByteBuffer image) throws EhFrameException {
        return build(ElfSections.parse(name, image));
    }

    /** Builds from one raw CFI section at {@code address} (no ELF around it: no text-segment filter). */
    static UnwindTable buildFromSection(String name, byte[] data, boolean eh, long address) throws EhFrameException {
        Collector col = new Collector(name, null);
        CfiSection sec = new CfiSection(name, data, eh, address);
        col.sections.add(eh ? ".eh_frame" : ".debug_frame");
        col.scan(sec, !eh);
        return col.compile();
    }

    static UnwindTable build(ElfSections elf) throws EhFrameException {
        return build(elf, elf);
    }

    /** .eh_frame from {@code elf}; .debug_frame from {@code debug} (the same file, or its separate debug file). */
    static UnwindTable build(ElfSections elf, ElfSections debug) throws EhFrameException {
        Collector col = new Collector(elf.name(), elf);
        SectionHeader eh = elf.find(".eh_frame");
        if (eh != null) {
            CfiSection sec = section(elf, eh, true, col);
            if (sec != null) {
                col.scan(sec, false);
                SectionHeader hdr = elf.find(".eh_frame_hdr");
                if (hdr != null) {
                    col.checkHdr(hdr, sec);
                }
            }
        }
        SectionHeader df = debug.find(".debug_frame");
        if (df == null) {
            df = debug.find(".zdebug_frame");
        }
        if (df != null) {
            CfiSection sec = section(debug, df, false, col);
            if (sec != null) {
                col.scan(sec, true);
            }
        }
        UnwindTable t = col.compile();
        if (!col.firstProblems.isEmpty()) {
            LOG.log(System.Logger.Level.DEBUG, () -> elf.name() + ": " + (col.skipped + col.malformed) + " CFI entries skipped or stopped, e.g. "
                    + col.firstProblems.getFirst());
        }
        return t;
    }

    private static CfiSection section(ElfSections elf, SectionHeader s, boolean eh, Collector col) throws EhFrameException {
        byte[] data;
        try {
            data = elf.contents(s);
        } catch (EhFrameException e) {
            if (e.problem() == Problem.BAD_ELF && elf == col.elf) {
                throw e; // the file itself is unreadable
            }
            col.problem(e); // a compressed section we cannot inflate: the other section may still do
            col.skipped++;
            return null;
        }
        col.sections.add(s.name());
        return new CfiSection(elf.name() + " " + s.name(), data, eh, s.addr());
    }

    /** Gathers FDEs from the sections, then orders, interprets and packs them. */
    private static final class Collector implements CfiSection.Visitor {
        final String name;
        final ElfSections elf; // null: a bare section
        final List<String> sections = new ArrayList<>();
        final List<CfiSection.Fde> fdes = new ArrayList<>();
        final List<CfiSection> owners = new ArrayList<>();
        final Map<Problem, Integer> problems = new EnumMap<>(Problem.class);
        final List<String> firstProblems = new ArrayList<>();
        CfiSection current;
        boolean currentIsDebug;
        int skipped, malformed, outside, overlapping, hdrEntries, hdrMismatches, debugFdes;
        long rowsInterpreted;
        final boolean filterByText;
        // eh_frame FDE ranges, for dropping overlapping debug_frame FDEs
        long[] ehBegin, ehMaxEnd;

        Collector(String name, ElfSections elf) {
            this.name = name;
            this.elf = elf;
            this.filterByText = elf != null && elf.execRanges().length > 0;
        }

        void problem(EhFrameException e) {
            problems.merge(e.problem(), 1, Integer::sum);
            if (firstProblems.size() < KEPT_PROBLEMS) {
                firstProblems.add(e.getMessage());
            }
        }

        void scan(CfiSection sec, boolean debug) {
            current = sec;
            currentIsDebug = debug;
            if (debug) {
                prepareOverlapIndex(); // eh_frame FDEs are all collected by now
            }
            sec.scan(this);
        }

        @Override
        public void fde(CfiSection.Fde fde) {
            if (fde.pcBegin() == fde.pcEnd()) {
                return; // covers nothing
            }
            if (filterByText && !elf.inExecutableSegment(fde.pcBegin(), fde.pcEnd())) {
                outside++;
                return;
            }
            if (currentIsDebug) {
                if (overlapsEh(fde.pcBegin(), fde.pcEnd())) {
                    return;
                }
                debugFdes++;
            }
            fdes.add(fde);
            owners.add(current);
        }

        @Override
        public void skipped(int offset, EhFrameException problem) {
            skipped++;
            problem(problem);
        }

        void checkHdr(SectionHeader s, CfiSection eh) {
            try {
                EhFrameHdr hdr = EhFrameHdr.parse(elf.name(), elf.contents(s), s.addr());
                if (hdr.ehFrameAddress() != eh.address) {
                    throw new EhFrameException(Problem.BAD_HEADER, elf.name() + ": .eh_frame_hdr names .eh_frame at 0x"
                            + Long.toHexString(hdr.ehFrameAddress()) + ", section is at 0x" + Long.toHexString(eh.address));
                }
                hdrEntries = hdr.count();
                // FDE address -> pc_begin as sorted primitive arrays: a boxed map cost ~10 MB for libjvm
                int n = fdes.size();
                long[] at = new long[n];
                long[] begins = new long[n];
                boolean sorted = true;
                for (int i = 0; i < n; i++) {
                    CfiSection.Fde f = fdes.get(i);
                    at[i] = eh.address + f.offset();
                    begins[i] = f.pcBegin();
                    sorted &= i == 0 || Long.compareUnsigned(at[i - 1], at[i]) < 0;
                }
                if (!sorted) { // scan order is section order, so this should not happen; stay correct anyway
                    Integer[] idx = new Integer[n];
                    for (int i = 0; i < n; i++) {
                        idx[i] = i;
                    }
                    long[] a0 = at.clone();
                    long[] b0 = begins.clone();
                    Arrays.sort(idx, (x, y) -> Long.compareUnsigned(a0[x], a0[y]));
                    for (int i = 0; i < n; i++) {
                        at[i] = a0[idx[i]];
                        begins[i] = b0[idx[i]];
                    }
                }
                for (int i = 0; i < hdr.count(); i++) {
                    int k = unsignedSearch(at, hdr.fdeAddress(i));
                    if (k < 0 || begins[k] != hdr.initialLocation(i)) {
                        hdrMismatches++;
                    }
                }
            } catch (EhFrameException e) {
                problem(e);
            }
        }

        private static int unsignedSearch(long[] a, long key) {
            int lo = 0;
            int hi = a.length - 1;
            while (lo <= hi) {
                int mid = (lo + hi) >>> 1;
                int c = Long.compareUnsigned(a[mid], key);
                if (c < 0) {
                    lo = mid + 1;
                } else if (c > 0) {
                    hi = mid - 1;
                } else {
                    return mid;
                }
            }
            return -1;
        }

        private void prepareOverlapIndex() {
            int n = fdes.size();
            ehBegin = new long[n];
            ehMaxEnd = new long[n];
            Integer[] idx = new Integer[n];
            for (int i = 0; i < n; i++) {
                idx[i] = i;
            }
            Arrays.sort(idx, (a, b) -> Long.compareUnsigned(fdes.get(a).pcBegin(), fdes.get(b).pcBegin()));
            long max = 0;
            for (int i = 0; i < n; i++) {
                CfiSection.Fde f = fdes.get(idx[i]);
                ehBegin[i] = f.pcBegin();
                max = i == 0 || Long.compareUnsigned(f.pcEnd(), max) > 0 ? f.pcEnd() : max;
                ehMaxEnd[i] = max;
            }
        }

        private boolean overlapsEh(long begin, long end) {
            // the last eh FDE starting before `end`; overlap iff some FDE up to it ends after `begin`
            int lo = 0;
            int hi = ehBegin.length;
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (Long.compareUnsigned(ehBegin[mid], end) < 0) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            return lo > 0 && Long.compareUnsigned(ehMaxEnd[lo - 1], begin) > 0;
        }

        UnwindTable compile() throws EhFrameException {
            int n = fdes.size();
            int[] order = sortedOrder();
            // ~4 merged rows per FDE in gcc/clang output (libc, libjvm): sized once, not grown by doubling
            Rows rows = new Rows(Math.max(256, (int) Math.min(1 << 24, fdes.size() * 4L + 64)));
            Rows scratch = new Rows();
            CfaInterpreter interp = new CfaInterpreter();
            int used = 0;
            for (int k = 0; k < n; k++) {
                CfiSection.Fde f = fdes.get(order[k]);
                long begin = f.pcBegin();
                long end = f.pcEnd();
                if (k > 0 && fdes.get(order[k - 1]).pcBegin() == begin) {
                    overlapping++; // same start as the previous: the first (eh_frame before debug_frame, then section order) wins
                    continue;
                }
                int j = k + 1;
                while (j < n && fdes.get(order[j]).pcBegin() == begin) {
                    j++;
                }
                boolean hasNext = j < n;
                long next = hasNext ? fdes.get(order[j]).pcBegin() : 0;
                if (hasNext && Long.compareUnsigned(next, end) < 0) {
                    overlapping++;
                    end = next;
                }
                scratch.clear();
                long clipEnd = end;
                try {
                    interp.run(owners.get(order[k]), f, (pc, rule) -> {
                        if (Long.compareUnsigned(pc, clipEnd) < 0) {
                            scratch.add(pc, rule);
                        }
                    });
                    rowsInterpreted += scratch.rawCount;
                    for (int i = 0; i < scratch.n; i++) {
                        rows.add(scratch.pcs[i], scratch.rules[i]);
                    }
                } catch (EhFrameException e) {
                    malformed++;
                    problem(e);
                    rows.add(begin, UnwindRule.stop(StopReason.MALFORMED_FDE));
                }
                used++;
                if (!hasNext || Long.compareUnsigned(next, end) > 0) {
                    rows.add(end, UnwindRule.stop(StopReason.NO_UNWIND_INFO)); // a gap follows
                }
            }
            int debugUsed = debugFdes;
            BuildStats stats = new BuildStats(sections, used, debugUsed, rowsInterpreted, skipped, malformed, outside, overlapping,
                    hdrEntries, hdrMismatches, problems, firstProblems);
            return pack(name, rows, stats);
        }

        /** FDE indexes by ascending start (ties: eh_frame first, as collected). */
        private int[] sortedOrder() {
            int n = fdes.size();
            int[] order = new int[n];
            boolean sorted = true;
            for (int i = 0; i < n; i++) {
                order[i] = i;
                if (i > 0 && Long.compareUnsigned(fdes.get(i - 1).pcBegin(), fdes.get(i).pcBegin()) > 0) {
                    sorted = false;
                }
            }
            if (sorted || n == 0) {
                return order;
            }
            long min = Long.MAX_VALUE;
            long max = 0;
            for (CfiSection.Fde f : fdes) {
                min = Math.min(min, f.pcBegin());
                max = Math.max(max, f.pcBegin());
            }
            if (min >= 0 && max - min < 1L << 43 && n < 1 << 20) {
                long[] keys = new long[n]; // (start - min) << 20 | index: one primitive sort, stable by index
                for (int i = 0; i < n; i++) {
                    keys[i] = (fdes.get(i).pcBegin() - min) << 20 | i;
                }
                Arrays.sort(keys);
                for (int i = 0; i < n; i++) {
                    order[i] = (int) (keys[i] & 0xfffff);
                }
                return order;
            }
            Integer[] boxed = new Integer[n];
            for (int i = 0; i < n; i++) {
                boxed[i] = i;
            }
            Arrays.sort(boxed, (a, b) -> {
                int c = Long.compareUnsigned(fdes.get(a).pcBegin(), fdes.get(b).pcBegin());
                return c != 0 ? c : Integer.compare(a, b);
            });
            for (int i = 0; i < n; i++) {
                order[i] = boxed[i];
            }
            return order;
        }
    }

    /**
     * A table from rows no FDE gave: JIT code described by its runtime's own layout (HotSpot's code cache). Row
     * {@code i} says that {@code rules[i]} applies from {@code pcs[i]} to the next row (a gap is a row whose rule
     * is {@code stop(NO_UNWIND_INFO)}; the last row should be one). PCs are runtime addresses (bias 0) and must
     * ascend.
     */
    public static UnwindTable fromRows(String name, long[] pcs, long[] rules, int n) throws EhFrameException {
        Rows r = new Rows(Math.max(16, n));
        for (int i = 0; i < n; i++) {
            if (i > 0 && Long.compareUnsigned(pcs[i], pcs[i - 1]) < 0) {
                throw new EhFrameException(Problem.BAD_CFA_PROGRAM, name + ": row " + i + " at 0x" + Long.toHexString(pcs[i])
                        + " is below the row before it");
            }
            r.add(pcs[i], rules[i]);
        }
        BuildStats stats = new BuildStats(List.of(), 0, 0, n, 0, 0, 0, 0, 0, 0, Map.of(), List.of());
        return pack(name, r, stats);
    }

    /** Packs merged rows into pages, a de-duplicated rule array and 4-byte rows. */
    static UnwindTable pack(String name, Rows r, BuildStats stats) throws EhFrameException {
        if (r.n == 0) {
            return new UnwindTable(name, 0, new int[0], new int[0], new long[0], stats);
        }
        long pcBase = r.pcs[0] & ~0xffffL;
        long span = (r.pcs[r.n - 1] - pcBase) >>> UnwindTable.PAGE_SHIFT;
        if (span >= MAX_PAGES) {
            throw new EhFrameException(Problem.TOO_LARGE, name + ": FDEs span " + span + " pages of 64 KiB, more than " + MAX_PAGES);
        }
        int pageCount = (int) span + 1;
        long stopNoInfo = UnwindRule.stop(StopReason.NO_UNWIND_INFO);
        RuleIndex ruleIndex = new RuleIndex();
        int[] pages = new int[pageCount * 2];
        int[] rows = new int[r.n + pageCount];
        int out = 0;
        int i = 0;
        long current = stopNoInfo; // rule in effect at the current page's start
        for (int p = 0; p < pageCount; p++) {
            long pageStart = pcBase + ((long) p << UnwindTable.PAGE_SHIFT);
            long pageEnd = pageStart + (1L << UnwindTable.PAGE_SHIFT);
            int first = out;
            boolean any = i < r.n && Long.compareUnsigned(r.pcs[i], pageEnd) < 0;
            if (!any && current == stopNoInfo) {
                pages[2 * p] = first;
                pages[2 * p + 1] = 0;
                continue;
            }
            if (!any || r.pcs[i] != pageStart) {
                rows[out++] = ruleIndex.of(current) << 16; // carry row at pc_low 0
            }
            while (i < r.n && Long.compareUnsigned(r.pcs[i], pageEnd) < 0) {
                rows[out++] = (int) (r.pcs[i] - pageStart) | ruleIndex.of(r.rules[i]) << 16;
                current = r.rules[i];
                i++;
            }
            pages[2 * p] = first;
            pages[2 * p + 1] = out - first;
        }
        return new UnwindTable(name, pcBase, pages, Arrays.copyOf(rows, out), ruleIndex.rules(), stats);
    }

    /**
     * Distinct rules in first-use order; past 65535 distinct rules, the rest share a stop(TOO_MANY_RULES).
     * An open-addressed long→index table: one lookup per row, and a HashMap<Long, Integer> boxed every
     * one of them (29 MB of garbage building libjvm's table, promoted by a small young generation).
     */
    private static final class RuleIndex {
        private long[] keys = new long[128];
        private int[] slots = new int[128]; // index + 1; 0 = empty
        private long[] rules = new long[64];
        private int n;

        int of(long rule) {
            int found = find(rule);
            if (found >= 0) {
                return found;
            }
            if (n == MAX_RULES - 1) {
                long tooMany = UnwindRule.stop(StopReason.TOO_MANY_RULES);
                int t = find(tooMany);
                if (t >= 0) {
                    return t;
                }
                rule = tooMany; // stored at the last index
            }
            if (n == rules.length) {
                rules = Arrays.copyOf(rules, n * 2);
            }
            rules[n] = rule;
            if ((n + 1) * 2 > keys.length) {
                grow();
            }
            insert(rule, n);
            return n++;
        }

        private int find(long rule) {
            int mask = keys.length - 1;
            for (int i = hash(rule) & mask; ; i = (i + 1) & mask) {
                if (slots[i] == 0) {
                    return -1;
                }
                if (keys[i] == rule) {
                    return slots[i] - 1;
                }
            }
        }

        private void insert(long rule, int index) {
            int mask = keys.length - 1;
            int i = hash(rule) & mask;
            while (slots[i] != 0) {
                i = (i + 1) & mask;
            }
            keys[i] = rule;
            slots[i] = index + 1;
        }

        private void grow() {
            keys = new long[keys.length * 2];
            slots = new int[slots.length * 2];
            for (int i = 0; i < n; i++) {
                insert(rules[i], i);
            }
        }

        private static int hash(long rule) {
            long h = rule * 0x9E3779B97F4A7C15L;
            return (int) (h ^ (h >>> 32));
        }

        long[] rules() {
            return Arrays.copyOf(rules, n);
        }
    }

    /** Ascending (pc, rule) rows; a row with the previous row's rule is dropped, a row at the same PC replaces it. */
    static final class Rows {
        long[] pcs;
        long[] rules;
        int n;

        Rows() {
            this(256);
        }

        Rows(int capacity) {
            pcs = new long[capacity];
            rules = new long[capacity];
        }
        long rawCount;

        void clear() {
            n = 0;
            rawCount = 0;
        }

        void add(long pc, long rule) {
            rawCount++;
            if (n > 0 && pcs[n - 1] == pc) {
                rules[n - 1] = rule;
                if (n > 1 && rules[n - 2] == rule) {
                    n--;
                }
                return;
            }
            if (n > 0 && rules[n - 1] == rule) {
                return;
            }
            if (n == pcs.length) {
                pcs = Arrays.copyOf(pcs, n * 2);
                rules = Arrays.copyOf(rules, n * 2);
            }
            pcs[n] = pc;
            rules[n] = rule;
            n++;
        }
    }
}
