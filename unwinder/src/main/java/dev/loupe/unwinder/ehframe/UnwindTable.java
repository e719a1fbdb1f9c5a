package dev.loupe.unwinder.ehframe;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A compiled unwind table for one executable or shared library (x86-64), in the exact form the kernel
 * walks. PCs are the file's own virtual addresses (as in its ELF headers and FDEs); a walker subtracts the
 * mapping's load bias first.
 *
 * <h2>Layout (all little-endian; indexes are table-local)</h2>
 * <pre>
 * header   pc_base u64      first covered page start (lowest FDE start rounded down to 64 KiB)
 *          page_count u32
 * pages    page_count x { u32 first_row; u32 row_count; }            8 B each
 *          page p covers [pc_base + p*65536, pc_base + (p+1)*65536)
 * rows     row_count x u32 = pc_low (bits 0..15) | rule_index (bits 16..31)    4 B each
 *          rows of a page ascend by pc_low; the first row of a page with rows has pc_low 0 (a row
 *          carrying the rule in effect at the page start is inserted when needed), so the search
 *          never leaves the page
 * rules    rule_count x u64 (see {@link UnwindRule}), de-duplicated per table, rule_count &lt;= 65536
 * </pre>
 *
 * <h2>Lookup (the BPF side mirrors {@link #lookup})</h2>
 * <pre>
 * if pc &lt; pc_base: not covered
 * p = (pc - pc_base) &gt;&gt; 16;  if p &gt;= page_count: not covered
 * {first, count} = pages[p];  if count == 0: stop(NO_UNWIND_INFO)
 * key = pc &amp; 0xffff;  lo = first;  hi = first + count          // rows[lo].pc_low == 0 &lt;= key
 * repeat 16 times: if hi - lo &gt; 1 { mid = (lo + hi) / 2; if rows[mid].pc_low &lt;= key then lo = mid else hi = mid }
 * rule = rules[rows[lo] &gt;&gt; 16]
 * </pre>
 * A page holds at most 65536 rows (pc_low values are distinct), so 16 halving steps always finish.
 * Gaps between FDEs are rows whose rule is {@code stop(NO_UNWIND_INFO)}; adjacent rows with the same rule
 * are merged.
 */
public final class UnwindTable {
    public static final int PAGE_SHIFT = 16;
    /** Binary-search steps that always suffice within one page. */
    public static final int SEARCH_STEPS = 16;
    /** Bytes of the header (pc_base u64, page_count u32, padded to 16). */
    public static final int HEADER_BYTES = 16;

    private final String name;
    private final long pcBase;
    private final int[] pages; // 2 ints per page: first_row, row_count
    private final int[] rows;
    private final long[] rules;
    private final BuildStats stats;

    UnwindTable(String name, long pcBase, int[] pages, int[] rows, long[] rules, BuildStats stats) {
        this.name = name;
        this.pcBase = pcBase;
        this.pages = pages;
        this.rows = rows;
        this.rules = rules;
        this.stats = stats;
    }

    /** The file (or image) name the table was built from. */
    public String name() {
        return name;
    }

    /** The rule for {@code pc} (a file virtual address), or {@link UnwindRule#NOT_COVERED}. */
    public long lookup(long pc) {
        if (Long.compareUnsigned(pc, pcBase) < 0) {
            return UnwindRule.NOT_COVERED;
        }
        long p = (pc - pcBase) >>> PAGE_SHIFT;
        if (p >= pageCount()) {
            return UnwindRule.NOT_COVERED;
        }
        int first = pages[2 * (int) p];
        int count = pages[2 * (int) p + 1];
        if (count == 0) {
            return UnwindRule.stop(StopReason.NO_UNWIND_INFO);
        }
        int key = (int) (pc & 0xffff);
        int lo = first;
        int hi = first + count;
        for (int i = 0; i < SEARCH_STEPS; i++) {
            if (hi - lo > 1) {
                int mid = (lo + hi) >>> 1;
                if ((rows[mid] & 0xffff) <= key) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
        }
        return rules[rows[lo] >>> 16];
    }

    public long pcBase() {
        return pcBase;
    }

    /** One past the last covered PC. */
    public long pcEnd() {
        return pcBase + ((long) pageCount() << PAGE_SHIFT);
    }

    public int pageCount() {
        return pages.length / 2;
    }

    public int rowCount() {
        return rows.length;
    }

    public int ruleCount() {
        return rules.length;
    }

    /** Pages as {first_row, row_count} int pairs. */
    public int[] pageWords() {
        return pages.clone();
    }

    /** Rows as u32 words: pc_low | rule_index &lt;&lt; 16. */
    public int[] rowWords() {
        return rows.clone();
    }

    /** Rules as u64 words ({@link UnwindRule}). */
    public long[] ruleWords() {
        return rules.clone();
    }

    /** The header: pc_base u64, page_count u32, 4 bytes of zero. */
    public byte[] headerBytes() {
        return ByteBuffer.allocate(HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN).putLong(pcBase).putInt(pageCount()).array();
    }

    public byte[] pageBytes() {
        ByteBuffer b = ByteBuffer.allocate(pages.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        b.asIntBuffer().put(pages);
        return b.array();
    }

    public byte[] rowBytes() {
        ByteBuffer b = ByteBuffer.allocate(rows.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        b.asIntBuffer().put(rows);
        return b.array();
    }

    public byte[] ruleBytes() {
        ByteBuffer b = ByteBuffer.allocate(rules.length * 8).order(ByteOrder.LITTLE_ENDIAN);
        b.asLongBuffer().put(rules);
        return b.array();
    }

    /** Bytes the table takes in the kernel: header, pages, rows and rules. */
    public long byteSize() {
        return HEADER_BYTES + pages.length * 4L + rows.length * 4L + rules.length * 8L;
    }

    /** {@link #byteSize()} / {@link #rowCount()} (0 for an empty table). */
    public double bytesPerRow() {
        return rows.length == 0 ? 0 : (double) byteSize() / rows.length;
    }

    /**
     * Checks every invariant the kernel's lookup relies on (rows of a page in bounds, ascending, the
     * first at pc_low 0; rule indexes in range; known rule kinds, runtimes' included); O(rows). Throws IllegalStateException.
     */
    public void verify() {
        if (rules.length > 1 << 16 || (pages.length & 1) != 0) {
            throw new IllegalStateException(name + ": " + rules.length + " rules, " + pages.length + " page words");
        }
        int expectFirst = 0;
        for (int p = 0; p < pageCount(); p++) {
            int first = pages[2 * p];
            int count = pages[2 * p + 1];
            if (first != expectFirst || count < 0 || count > 1 << 16 || rows.length - first < count) {
                throw new IllegalStateException(name + ": page " + p + " rows [" + first + ", +" + count + ") out of order or bounds");
            }
            for (int i = first; i < first + count; i++) {
                int low = rows[i] & 0xffff;
                if (i == first ? low != 0 : low <= (rows[i - 1] & 0xffff)) {
                    throw new IllegalStateException(name + ": page " + p + " row " + i + " pc_low " + low + " out of order");
                }
                if ((rows[i] >>> 16) >= rules.length) {
                    throw new IllegalStateException(name + ": row " + i + " names rule " + (rows[i] >>> 16) + " of " + rules.length);
                }
            }
            expectFirst = first + count;
        }
        if (expectFirst != rows.length) {
            throw new IllegalStateException(name + ": pages cover " + expectFirst + " of " + rows.length + " rows");
        }
        for (long r : rules) {
            int kind = UnwindRule.kind(r);
            boolean ok = switch (kind) {
                case UnwindRule.KIND_CFA_RSP, UnwindRule.KIND_CFA_RBP -> UnwindRule.rbpRule(r) <= UnwindRule.RBP_UNKNOWN;
                case UnwindRule.KIND_PLT -> UnwindRule.cfaOffset(r) >= 0 && UnwindRule.cfaOffset(r) <= 15;
                case UnwindRule.KIND_SIGNAL -> true;
                case UnwindRule.KIND_STOP -> UnwindRule.stopReason(r) != null && UnwindRule.stopReason(r).code() < 32;
                // the bci's offsets, one byte each (hotspot.InterpreterFrameStep.rule), or none
                case UnwindRule.KIND_JAVA_INTERP -> (r >>> 40) == 0 && (r == UnwindRule.KIND_JAVA_INTERP
                        || ((r >>> 8) & 0xff) != 0 && ((r >>> 24) & 0xff) != 0);
                case UnwindRule.KIND_PYTHON_EVAL -> (UnwindRule.rbpRule(r) >> 4) <= UnwindRule.KIND_CFA_RBP
                        && (UnwindRule.rbpRule(r) & 0xf) <= UnwindRule.RBP_UNKNOWN;
                case UnwindRule.KIND_PYTHON_DATA, UnwindRule.KIND_HOTSPOT_DATA, UnwindRule.KIND_V8_DATA -> true;
                case UnwindRule.KIND_V8_FRAME -> (r & ~0x1ffL) == 0 && (r & 0xff) == UnwindRule.KIND_V8_FRAME; // aux 0 or 1
                case UnwindRule.KIND_HOTSPOT_CODE -> r == UnwindRule.KIND_HOTSPOT_CODE;
                default -> false;
            };
            if (!ok) {
                throw new IllegalStateException(name + ": bad rule 0x" + Long.toHexString(r));
            }
        }
    }

    public BuildStats stats() {
        return stats;
    }

    @Override
    public String toString() {
        return String.format("UnwindTable[%s: %d rows, %d rules, %d pages, %d bytes, %.2f B/row]", name, rowCount(), ruleCount(),
                pageCount(), byteSize(), bytesPerRow());
    }
}
