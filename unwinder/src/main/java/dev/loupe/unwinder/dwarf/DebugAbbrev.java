package dev.loupe.unwinder.dwarf;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;

/**
 * One abbreviation table of {@code .debug_abbrev} (DWARF 5 §7.5.3): for each code a DIE starts with, its tag, whether
 * it has children, and its attributes' names and forms ({@code DW_FORM_implicit_const} values kept). Parsing stops at
 * the table's terminating 0 code; every step consumes bytes, so work is bounded by the section's size.
 */
final class DebugAbbrev {
    static final int DW_FORM_IMPLICIT_CONST = 0x21;

    /** One abbreviation: {@code attrs[i]} has form {@code forms[i]} ({@code consts[i]} its implicit constant). */
    record Abbrev(int tag, boolean children, int[] attrs, int[] forms, long[] consts) {}

    private final Abbrev[] dense; // codes 1..dense.length-1, the usual case
    private final Map<Long, Abbrev> sparse;
    private final long bytes;

    private DebugAbbrev(Abbrev[] dense, Map<Long, Abbrev> sparse, long bytes) {
        this.dense = dense;
        this.sparse = sparse;
        this.bytes = bytes;
    }

    /** The table at {@code offset} of {@code .debug_abbrev}. */
    static DebugAbbrev parse(String name, ByteBuffer section, long offset) throws DwarfException {
        Cursor c = new Cursor(name + ": .debug_abbrev", section, offset, section.limit());
        if (offset < 0 || offset >= section.limit()) {
            throw c.error("abbreviation table offset " + offset + " lies outside the " + section.limit() + "-byte section");
        }
        Map<Long, Abbrev> byCode = new HashMap<>();
        long maxCode = 0;
        long bytes = 64;
        int[] attrs = new int[16];
        int[] forms = new int[16];
        long[] consts = new long[16];
        for (long code = c.uleb(); code != 0; code = c.uleb()) {
            int tag = (int) Math.min(Integer.MAX_VALUE, c.uleb());
            boolean children = c.u8() != 0;
            int n = 0;
            while (true) {
                long attr = c.uleb();
                long form = c.uleb();
                if (attr == 0 && form == 0) {
                    break;
                }
                long value = form == DW_FORM_IMPLICIT_CONST ? c.sleb() : 0;
                if (n == attrs.length) {
                    attrs = java.util.Arrays.copyOf(attrs, n * 2);
                    forms = java.util.Arrays.copyOf(forms, n * 2);
                    consts = java.util.Arrays.copyOf(consts, n * 2);
                }
                attrs[n] = (int) Math.min(Integer.MAX_VALUE, attr);
                forms[n] = (int) Math.min(Integer.MAX_VALUE, form);
                consts[n] = value;
                n++;
            }
            if (byCode.putIfAbsent(code, new Abbrev(tag, children, java.util.Arrays.copyOf(attrs, n),
                    java.util.Arrays.copyOf(forms, n), java.util.Arrays.copyOf(consts, n))) != null) {
                throw c.error("abbreviation code " + code + " defined twice in the table at " + offset);
            }
            maxCode = code < 0 || maxCode < 0 ? -1 : Math.max(maxCode, code); // -1: a code past 2^63, not dense
            bytes += 64 + n * 16L;
        }
        if (maxCode > 0 && maxCode <= 4L * byCode.size() + 16) { // small codes only, so int indices
            Abbrev[] dense = new Abbrev[(int) maxCode + 1];
            byCode.forEach((k, v) -> dense[k.intValue()] = v);
            return new DebugAbbrev(dense, null, bytes + dense.length * 8L);
        }
        return new DebugAbbrev(null, byCode, bytes + byCode.size() * 48L);
    }

    /** The abbreviation of {@code code}, null if the table has none. */
    Abbrev get(long code) {
        if (dense != null) {
            return code > 0 && code < dense.length ? dense[(int) code] : null;
        }
        return sparse.get(code);
    }

    /** Estimated heap. */
    long bytes() {
        return bytes;
    }
}
