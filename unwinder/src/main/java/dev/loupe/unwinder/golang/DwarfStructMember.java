package dev.loupe.unwinder.golang;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalLong;

/**
 * Finds one member's byte offset in one named structure of {@code .debug_info} (DWARF 2–5): walks every
 * DIE with the abbreviation tables of {@code .debug_abbrev}, skipping attributes by form. Only what it
 * takes to read {@code DW_TAG_structure_type "runtime.g" / DW_TAG_member "goid"}; not a general DWARF
 * reader. Every read is bounds-checked and every loop advances, so malformed input ends in an exception.
 */
final class DwarfStructMember {
    private static final int TAG_MEMBER = 0x0d;
    private static final int TAG_STRUCTURE = 0x13;
    private static final int AT_NAME = 0x03;
    private static final int AT_DATA_MEMBER_LOCATION = 0x38;
    private static final int DW_OP_PLUS_UCONST = 0x23;

    private final String where;
    private final byte[] info;
    private final byte[] abbrev;
    private final byte[] str; // may be null: only DW_FORM_strp needs it
    private final Map<Long, Map<Long, long[]>> abbrevTables = new HashMap<>();

    DwarfStructMember(String where, byte[] info, byte[] abbrev, byte[] str) {
        this.where = where;
        this.info = info;
        this.abbrev = abbrev;
        this.str = str;
    }

    /** The member's DW_AT_data_member_location in the first structure of that name that has the member. */
    OptionalLong find(String struct, String member) throws GoBinaryException {
        int p = 0;
        while (p < info.length) {
            int unitStart = p;
            long len = u32(p);
            p += 4;
            int offsetSize = 4;
            if (len == 0xffffffffL) {
                len = u64(p);
                p += 8;
                offsetSize = 8;
            }
            if (len < 0 || len > info.length - p) {
                throw error("unit at " + unitStart + " has length " + len + ", past the section's end");
            }
            int unitEnd = (int) (p + len);
            int version = u16(p);
            p += 2;
            long abbrevOffset;
            int addrSize;
            if (version >= 5) {
                int unitType = u8(p);
                addrSize = u8(p + 1);
                p += 2;
                abbrevOffset = offsetSize == 8 ? u64(p) : u32(p);
                p += offsetSize;
                if (unitType == 2 || unitType == 6) { // type / split type unit: signature and type offset
                    p += 8 + offsetSize;
                } else if (unitType == 4 || unitType == 5) { // skeleton / split compile: dwo id
                    p += 8;
                }
            } else if (version >= 2) {
                abbrevOffset = offsetSize == 8 ? u64(p) : u32(p);
                p += offsetSize;
                addrSize = u8(p);
                p += 1;
            } else {
                throw error("unit at " + unitStart + " has DWARF version " + version);
            }
            Map<Long, long[]> abbrevs = abbrevs(abbrevOffset);
            Unit u = new Unit(version, offsetSize, addrSize, unitEnd);
            OptionalLong r = walk(u, p, abbrevs, struct, member);
            if (r.isPresent()) {
                return r;
            }
            p = unitEnd;
        }
        return OptionalLong.empty();
    }

    private record Unit(int version, int offsetSize, int addrSize, int end) {}

    private OptionalLong walk(Unit u, int p, Map<Long, long[]> abbrevs, String struct, String member) throws GoBinaryException {
        int depth = 0;
        int structDepth = -1; // depth of the children of the matching structure, while inside it
        int[] pos = {p};
        while (pos[0] < u.end()) {
            long code = uleb(pos, u.end());
            if (code == 0) {
                depth--;
                if (structDepth >= 0 && depth < structDepth) {
                    structDepth = -1;
                }
                continue;
            }
            long[] a = abbrevs.get(code);
            if (a == null) {
                throw error("DIE at " + (pos[0] - 1) + " uses abbreviation " + code + ", which is not defined");
            }
            int tag = (int) a[0];
            boolean children = a[1] != 0;
            String name = null;
            long location = -1;
            for (int i = 2; i + 2 < a.length; i += 3) {
                int at = (int) a[i];
                int form = (int) a[i + 1];
                if (at == AT_NAME) {
                    name = string(u, form, pos);
                } else if (at == AT_DATA_MEMBER_LOCATION) {
                    location = memberLocation(u, form, a[i + 2], pos);
                } else {
                    skip(u, form, pos);
                }
            }
            if (structDepth >= 0 && depth == structDepth && tag == TAG_MEMBER && member.equals(name) && location >= 0) {
                return OptionalLong.of(location);
            }
            if (tag == TAG_STRUCTURE && children && struct.equals(name)) {
                structDepth = depth + 1;
            }
            if (children) {
                depth++;
            }
        }
        return OptionalLong.empty();
    }

    /** Abbreviation table at an offset: code → {tag, hasChildren, (attr, form, implicitConst)*}. */
    private Map<Long, long[]> abbrevs(long offset) throws GoBinaryException {
        Map<Long, long[]> cached = abbrevTables.get(offset);
        if (cached != null) {
            return cached;
        }
        if (offset < 0 || offset >= abbrev.length) {
            throw error("abbreviation table offset " + offset + " beyond .debug_abbrev of " + abbrev.length + " bytes");
        }
        Map<Long, long[]> t = new HashMap<>();
        int[] pos = {(int) offset};
        while (true) {
            long code = ulebIn(abbrev, pos, abbrev.length);
            if (code == 0) {
                break;
            }
            long tag = ulebIn(abbrev, pos, abbrev.length);
            if (pos[0] >= abbrev.length) {
                throw error("abbreviation " + code + " truncated");
            }
            long children = abbrev[pos[0]++];
            long[] spec = new long[2 + 3 * 8];
            spec[0] = tag;
            spec[1] = children;
            int n = 2;
            while (true) {
                long at = ulebIn(abbrev, pos, abbrev.length);
                long form = ulebIn(abbrev, pos, abbrev.length);
                if (at == 0 && form == 0) {
                    break;
                }
                long implicit = form == 0x21 ? slebIn(abbrev, pos, abbrev.length) : 0;
                if (n + 3 > spec.length) {
                    if (spec.length > 3 * 4096) {
                        throw error("abbreviation " + code + " has too many attributes");
                    }
                    spec = java.util.Arrays.copyOf(spec, spec.length * 2);
                }
                spec[n++] = at;
                spec[n++] = form;
                spec[n++] = implicit;
            }
            t.put(code, java.util.Arrays.copyOf(spec, n));
        }
        abbrevTables.put(offset, t);
        return t;
    }

    private String string(Unit u, int form, int[] pos) throws GoBinaryException {
        if (form == 0x08) { // DW_FORM_string
            int start = pos[0];
            int e = start;
            while (e < u.end() && info[e] != 0) {
                e++;
            }
            if (e >= u.end()) {
                throw error("string at " + start + " is not terminated");
            }
            pos[0] = e + 1;
            return new String(info, start, e - start, StandardCharsets.UTF_8);
        }
        if (form == 0x0e) { // DW_FORM_strp
            long off = u.offsetSize() == 8 ? u64(pos[0]) : u32(pos[0]);
            pos[0] += u.offsetSize();
            if (str == null || off < 0 || off >= str.length) {
                throw error("string offset " + off + " outside .debug_str");
            }
            int e = (int) off;
            while (e < str.length && str[e] != 0) {
                e++;
            }
            return new String(str, (int) off, e - (int) off, StandardCharsets.UTF_8);
        }
        skip(u, form, pos); // strx and others: names this reader does not need to resolve
        return null;
    }

    private long memberLocation(Unit u, int form, long implicit, int[] pos) throws GoBinaryException {
        int p = pos[0];
        switch (form) {
            case 0x0b -> { pos[0] = p + 1; check(pos[0], u); return u8(p); }
            case 0x05 -> { pos[0] = p + 2; check(pos[0], u); return u16(p); }
            case 0x06 -> { pos[0] = p + 4; check(pos[0], u); return u32(p); }
            case 0x07 -> { pos[0] = p + 8; check(pos[0], u); return u64(p); }
            case 0x0f -> { return uleb(pos, u.end()); }
            case 0x0d -> { return sleb(pos, u.end()); }
            case 0x21 -> { return implicit; }
            case 0x18, 0x09, 0x0a -> { // exprloc / block: DW_OP_plus_uconst N
                long len = form == 0x0a ? u8(p) : uleb(pos, u.end());
                int at = form == 0x0a ? p + 1 : pos[0];
                if (len < 0 || len > u.end() - at) {
                    throw error("location block at " + p + " runs past its unit");
                }
                pos[0] = (int) (at + len);
                if (len >= 2 && u8(at) == DW_OP_PLUS_UCONST) {
                    int[] q = {at + 1};
                    return uleb(q, pos[0]);
                }
                return -1;
            }
            default -> {
                skip(u, form, pos);
                return -1;
            }
        }
    }

    private void skip(Unit u, int form, int[] pos) throws GoBinaryException {
        int p = pos[0];
        long n;
        switch (form) {
            case 0x01 -> n = u.addrSize();
            case 0x0b, 0x0c, 0x11, 0x25, 0x29 -> n = 1;
            case 0x05, 0x12, 0x26, 0x2a -> n = 2;
            case 0x27, 0x2b -> n = 3;
            case 0x06, 0x13, 0x1c, 0x28, 0x2c -> n = 4;
            case 0x07, 0x14, 0x20, 0x24 -> n = 8;
            case 0x1e -> n = 16;
            case 0x0e, 0x17, 0x1d, 0x1f -> n = u.offsetSize();
            case 0x10 -> n = u.version() <= 2 ? u.addrSize() : u.offsetSize();
            case 0x19, 0x21 -> n = 0;
            case 0x08 -> {
                int e = p;
                while (e < u.end() && info[e] != 0) {
                    e++;
                }
                n = e - p + 1;
            }
            case 0x0d, 0x0f, 0x15, 0x1a, 0x1b, 0x22, 0x23 -> {
                uleb(pos, u.end()); // sleb and uleb have the same length
                return;
            }
            case 0x03 -> { n = 2 + (long) u16(p); }
            case 0x04 -> { n = 4 + u32(p); }
            case 0x0a -> { n = 1 + (long) u8(p); }
            case 0x09, 0x18 -> {
                long len = uleb(pos, u.end());
                n = len;
                p = pos[0];
            }
            case 0x16 -> { // indirect: the form comes first
                long f = uleb(pos, u.end());
                if (f == 0x16) {
                    throw error("DW_FORM_indirect pointing at itself at " + p);
                }
                skip(u, (int) f, pos);
                return;
            }
            default -> throw error("unknown attribute form 0x" + Integer.toHexString(form) + " at " + p);
        }
        if (n < 0 || n > u.end() - p) {
            throw error("attribute at " + p + " runs past its unit");
        }
        pos[0] = (int) (p + n);
    }

    private void check(int p, Unit u) throws GoBinaryException {
        if (p > u.end()) {
            throw error("attribute runs past its unit at " + p);
        }
    }

    private long uleb(int[] pos, int end) throws GoBinaryException {
        return ulebIn(info, pos, end);
    }

    private long sleb(int[] pos, int end) throws GoBinaryException {
        return slebIn(info, pos, end);
    }

    private long ulebIn(byte[] b, int[] pos, int end) throws GoBinaryException {
        long v = 0;
        int shift = 0;
        while (true) {
            if (pos[0] >= end) {
                throw error("LEB128 runs past the end at " + pos[0]);
            }
            int x = b[pos[0]++] & 0xff;
            if (shift < 64) {
                v |= (long) (x & 0x7f) << shift;
            }
            shift += 7;
            if ((x & 0x80) == 0) {
                return v;
            }
        }
    }

    private long slebIn(byte[] b, int[] pos, int end) throws GoBinaryException {
        long v = 0;
        int shift = 0;
        int x;
        do {
            if (pos[0] >= end) {
                throw error("LEB128 runs past the end at " + pos[0]);
            }
            x = b[pos[0]++] & 0xff;
            if (shift < 64) {
                v |= (long) (x & 0x7f) << shift;
            }
            shift += 7;
        } while ((x & 0x80) != 0);
        if (shift < 64 && (x & 0x40) != 0) {
            v |= -1L << shift;
        }
        return v;
    }

    private int u8(int p) throws GoBinaryException {
        if (p < 0 || p >= info.length) {
            throw error("read at " + p + " beyond .debug_info of " + info.length + " bytes");
        }
        return info[p] & 0xff;
    }

    private int u16(int p) throws GoBinaryException {
        return u8(p) | u8(p + 1) << 8;
    }

    private long u32(int p) throws GoBinaryException {
        return (long) u16(p) | (long) u16(p + 2) << 16;
    }

    private long u64(int p) throws GoBinaryException {
        return u32(p) | u32(p + 4) << 32;
    }

    private GoBinaryException error(String what) {
        return new GoBinaryException(where + ": .debug_info: " + what);
    }
}
