package dev.loupe.unwinder.dwarf;

import java.nio.ByteBuffer;

/**
 * Reads one DIE of {@code .debug_info} (DWARF 2-5 forms, GNU extensions' sizes) and keeps the attributes the inline
 * reader uses: code ranges, names, references to other DIEs, call sites and the unit's bases. Every other attribute is
 * skipped by its form's size; a string is only read when asked ({@link #string}).
 */
final class DieReader {
    private static final int DW_AT_STMT_LIST = 0x10;
    private static final int DW_AT_NAME = 0x03;
    private static final int DW_AT_COMP_DIR = 0x1b;
    private static final int DW_AT_LOW_PC = 0x11;
    private static final int DW_AT_HIGH_PC = 0x12;
    private static final int DW_AT_ABSTRACT_ORIGIN = 0x31;
    private static final int DW_AT_DECL_LINE = 0x3b;
    private static final int DW_AT_SPECIFICATION = 0x47;
    private static final int DW_AT_RANGES = 0x55;
    private static final int DW_AT_CALL_FILE = 0x58;
    private static final int DW_AT_CALL_LINE = 0x59;
    private static final int DW_AT_LINKAGE_NAME = 0x6e;
    private static final int DW_AT_STR_OFFSETS_BASE = 0x72;
    private static final int DW_AT_ADDR_BASE = 0x73;
    private static final int DW_AT_RNGLISTS_BASE = 0x74;
    private static final int DW_AT_MIPS_LINKAGE_NAME = 0x2007;
    private static final int DW_AT_DWO_NAME = 0x76;
    private static final int DW_AT_GNU_DWO_NAME = 0x2130;
    private static final int DW_AT_GNU_DWO_ID = 0x2131;
    private static final int DW_AT_GNU_RANGES_BASE = 0x2132;
    private static final int DW_AT_GNU_ADDR_BASE = 0x2133;

    static final int DW_FORM_ADDR = 0x01;
    static final int DW_FORM_STRING = 0x08;
    static final int DW_FORM_STRP = 0x0e;
    static final int DW_FORM_STRX = 0x1a;
    static final int DW_FORM_ADDRX = 0x1b;
    static final int DW_FORM_LINE_STRP = 0x1f;
    static final int DW_FORM_STRX1 = 0x25;
    static final int DW_FORM_STRX4 = 0x28;
    static final int DW_FORM_ADDRX1 = 0x29;
    static final int DW_FORM_ADDRX4 = 0x2c;
    static final int DW_FORM_GNU_ADDR_INDEX = 0x1f01;
    static final int DW_FORM_GNU_STR_INDEX = 0x1f02;
    static final int DW_FORM_REF_SUP4 = 0x1c;
    static final int DW_FORM_STRP_SUP = 0x1d;
    static final int DW_FORM_REF_SUP8 = 0x24;
    static final int DW_FORM_GNU_REF_ALT = 0x1f20;
    static final int DW_FORM_GNU_STRP_ALT = 0x1f21;
    /** Marks a reference into the supplementary file (dwz's alternate file): its .debug_info offset, or-ed with this. */
    static final long IN_SUPPLEMENTARY = 1L << 62;
    private static final int MAX_INDIRECT = 4;

    /** The kept attributes of one DIE (reused: {@link #read} resets it). */
    static final class Die {
        long offset;
        int tag;
        boolean children;
        int lowForm; // 0: none
        long lowPc; // an index into .debug_addr for addrx forms
        int highForm; // 0: none
        long highPc;
        int rangesForm; // 0: none
        long rangesValue;
        long origin = -1; // abstract_origin's .debug_info offset, -1: none or unresolvable
        long spec = -1;
        int nameForm;
        long nameValue;
        int linkageForm;
        long linkageValue;
        long callFile;
        long callLine;
        long declLine;
        long stmtList = -1;
        long addrBase;
        long rnglistsBase;
        long strOffsetsBase;
        int compDirForm; // 0: none
        long compDirValue;
        int dwoNameForm; // 0: none (a skeleton unit names its split unit's file)
        long dwoNameValue;
        long gnuDwoId;
        long gnuRangesBase;

        void reset(long at) {
            offset = at;
            lowForm = 0;
            highForm = 0;
            rangesForm = 0;
            origin = -1;
            spec = -1;
            nameForm = 0;
            linkageForm = 0;
            callFile = 0;
            callLine = 0;
            declLine = 0;
            stmtList = -1;
            addrBase = 0;
            rnglistsBase = 0;
            strOffsetsBase = 0;
            compDirForm = 0;
            dwoNameForm = 0;
            gnuDwoId = 0;
            gnuRangesBase = 0;
        }

        boolean hasCode() {
            return rangesForm != 0 || (lowForm != 0 && highForm != 0);
        }

        /** DW_AT_low_pc as an address (0 when absent), {@code u}'s .debug_addr read for an addrx form. */
        long low(DebugInfo.Unit u, DwarfRanges r) throws DwarfException {
            return lowForm == 0 ? 0 : lowForm == DW_FORM_ADDR ? lowPc : r.address(u, lowPc);
        }

        /** Appends the DIE's code ranges (low/high pc, or its range list) to {@code out}. */
        void ranges(DebugInfo.Unit u, DwarfRanges r, DwarfRanges.Pairs out) throws DwarfException {
            if (rangesForm != 0) {
                r.read(u, rangesForm, rangesValue, out);
            } else if (lowForm != 0 && highForm != 0) {
                long low = low(u, r);
                long high = highForm == DW_FORM_ADDR ? highPc : isAddress(highForm) ? r.address(u, highPc) : low + highPc;
                out.add(low, high);
            }
        }
    }

    private final String name;
    private final DebugInfo.Sections s;
    private final ByteBuffer supStr; // the supplementary file's .debug_str (strp_sup, GNU_strp_alt), may be null
    private final Die die = new Die();

    DieReader(String name, DebugInfo.Sections s) {
        this(name, s, null);
    }

    DieReader(String name, DebugInfo.Sections s, ByteBuffer supStr) {
        this.name = name;
        this.s = s;
        this.supStr = supStr;
    }

    Cursor cursor(long pos, long end) {
        return new Cursor(name + ": .debug_info", s.info(), pos, end);
    }

    /** The DIE at the cursor; null for a null entry (the end of a sibling list). The returned Die is reused. */
    Die read(Cursor c, DebugInfo.Unit u, DebugAbbrev abbrevs) throws DwarfException {
        long at = c.pos;
        long code = c.uleb();
        if (code == 0) {
            return null;
        }
        DebugAbbrev.Abbrev a = abbrevs.get(code);
        if (a == null) {
            throw c.error("DIE at " + at + " uses abbreviation code " + code + ", which its unit's table lacks");
        }
        Die d = die;
        d.reset(at);
        d.tag = a.tag();
        d.children = a.children();
        int[] attrs = a.attrs();
        int[] forms = a.forms();
        for (int i = 0; i < attrs.length; i++) {
            int form = forms[i];
            for (int k = 0; form == 0x16; k++) { // DW_FORM_indirect: the form is in the data
                if (k == MAX_INDIRECT) {
                    throw c.error("DIE at " + at + ": indirect forms nest more than " + MAX_INDIRECT + " deep");
                }
                form = (int) Math.min(Integer.MAX_VALUE, c.uleb());
            }
            long v = form == DebugAbbrev.DW_FORM_IMPLICIT_CONST ? a.consts()[i] : value(c, u, form);
            switch (attrs[i]) {
                case DW_AT_LOW_PC -> {
                    d.lowForm = form;
                    d.lowPc = v;
                }
                case DW_AT_HIGH_PC -> {
                    d.highForm = form;
                    d.highPc = v;
                }
                case DW_AT_RANGES -> {
                    d.rangesForm = form;
                    d.rangesValue = v;
                }
                case DW_AT_ABSTRACT_ORIGIN -> d.origin = reference(u, form, v);
                case DW_AT_SPECIFICATION -> d.spec = reference(u, form, v);
                case DW_AT_NAME -> {
                    d.nameForm = form;
                    d.nameValue = v;
                }
                case DW_AT_LINKAGE_NAME, DW_AT_MIPS_LINKAGE_NAME -> {
                    d.linkageForm = form;
                    d.linkageValue = v;
                }
                case DW_AT_CALL_FILE -> d.callFile = v;
                case DW_AT_CALL_LINE -> d.callLine = v;
                case DW_AT_DECL_LINE -> d.declLine = v;
                case DW_AT_STMT_LIST -> d.stmtList = v;
                case DW_AT_ADDR_BASE -> d.addrBase = v;
                case DW_AT_RNGLISTS_BASE -> d.rnglistsBase = v;
                case DW_AT_STR_OFFSETS_BASE -> d.strOffsetsBase = v;
                case DW_AT_DWO_NAME, DW_AT_GNU_DWO_NAME -> {
                    d.dwoNameForm = form;
                    d.dwoNameValue = v;
                }
                case DW_AT_GNU_DWO_ID -> d.gnuDwoId = v;
                case DW_AT_GNU_RANGES_BASE -> d.gnuRangesBase = v;
                case DW_AT_GNU_ADDR_BASE -> d.addrBase = v;
                case DW_AT_COMP_DIR -> {
                    d.compDirForm = form;
                    d.compDirValue = v;
                }
                default -> { }
            }
        }
        return d;
    }

    static boolean isAddress(int form) {
        return form == DW_FORM_ADDR || form == DW_FORM_ADDRX || form == DW_FORM_GNU_ADDR_INDEX
                || (form >= DW_FORM_ADDRX1 && form <= DW_FORM_ADDRX4);
    }

    /**
     * A reference's .debug_info offset, or-ed with {@link #IN_SUPPLEMENTARY} for one into the supplementary file
     * (DWARF 5 ref_sup, dwz's GNU_ref_alt); -1 for type units' signatures.
     */
    private static long reference(DebugInfo.Unit u, int form, long v) {
        if (v < 0 || v >= IN_SUPPLEMENTARY) {
            return -1; // no section is this large
        }
        return switch (form) {
            case 0x11, 0x12, 0x13, 0x14, 0x15 -> u.offset() + v; // ref1..ref8, ref_udata: from the unit's start
            case 0x10 -> v; // ref_addr
            case DW_FORM_REF_SUP4, DW_FORM_REF_SUP8, DW_FORM_GNU_REF_ALT -> v | IN_SUPPLEMENTARY;
            default -> -1;
        };
    }

    /**
     * Reads an attribute's value: the number for constants, addresses (an index for addrx forms), references and
     * section offsets; a string's offset ({@code .debug_str}'s, {@code .debug_line_str}'s, the index for strx forms,
     * the position in .debug_info for an inline string); 0 for blocks, which are skipped.
     */
    private static long value(Cursor c, DebugInfo.Unit u, int form) throws DwarfException {
        return switch (form) {
            case DW_FORM_ADDR -> c.unsigned(u.addrSize());
            case 0x03 -> skip(c, c.u16()); // block2
            case 0x04 -> skip(c, c.u32()); // block4
            case 0x05 -> c.u16(); // data2
            case 0x06 -> c.u32(); // data4
            case 0x07 -> c.u64(); // data8
            case DW_FORM_STRING -> {
                long at = c.pos;
                c.skipCString(); // read only if it names a function (a long C++ name there is then cut, not an error)
                yield at;
            }
            case 0x09, 0x18 -> skip(c, c.uleb()); // block, exprloc
            case 0x0a -> skip(c, c.u8()); // block1
            case 0x0b -> c.u8(); // data1
            case 0x0c -> c.u8(); // flag
            case 0x0d -> c.sleb(); // sdata
            case DW_FORM_STRP, DW_FORM_LINE_STRP, 0x17, 0x1d, 0x1f20, 0x1f21 -> c.unsigned(u.offsetSize()); // + sec_offset, strp_sup, GNU alt
            case 0x0f, 0x15, DW_FORM_STRX, DW_FORM_ADDRX, 0x22, 0x23, DW_FORM_GNU_ADDR_INDEX, DW_FORM_GNU_STR_INDEX -> c.uleb();
            case 0x10 -> c.unsigned(u.version() <= 2 ? u.addrSize() : u.offsetSize()); // ref_addr
            case 0x11 -> c.u8(); // ref1
            case 0x12 -> c.u16(); // ref2
            case 0x13, 0x1c -> c.u32(); // ref4, ref_sup4
            case 0x14, 0x20, 0x24 -> c.u64(); // ref8, ref_sig8, ref_sup8
            case 0x19 -> 1; // flag_present
            case 0x1e -> skip(c, 16); // data16
            case 0x25, 0x29 -> c.u8(); // strx1, addrx1
            case 0x26, 0x2a -> c.u16();
            case 0x27, 0x2b -> c.u16() | ((long) c.u8() << 16);
            case 0x28, 0x2c -> c.u32();
            default -> throw c.error("unknown attribute form 0x" + Integer.toHexString(form) + " at offset " + c.pos);
        };
    }

    private static long skip(Cursor c, long n) throws DwarfException {
        c.skip(n);
        return 0;
    }

    /** The string an attribute of {@code form} with value {@code v} names; null when its section is missing or elsewhere. */
    String string(DebugInfo.Unit u, int form, long v) throws DwarfException {
        return switch (form) {
            case DW_FORM_STRING -> cursor(0, s.info().limit()).cstringAt(v);
            case DW_FORM_STRP -> in(s.str(), ".debug_str", v);
            case DW_FORM_LINE_STRP -> in(s.lineStr(), ".debug_line_str", v);
            case DW_FORM_STRP_SUP, DW_FORM_GNU_STRP_ALT -> in(supStr, "supplementary .debug_str", v);
            case DW_FORM_STRX, DW_FORM_GNU_STR_INDEX, 0x25, 0x26, 0x27, 0x28 -> {
                if (s.strOffsets() == null) {
                    yield null;
                }
                Cursor c = new Cursor(name + ": .debug_str_offsets", s.strOffsets(), 0, s.strOffsets().limit());
                if (v < 0 || v > s.strOffsets().limit()) {
                    throw c.error("string index " + Long.toUnsignedString(v) + " outside the section");
                }
                c.pos = u.strOffsetsBase() + v * u.offsetSize();
                yield in(s.str(), ".debug_str", c.unsigned(u.offsetSize()));
            }
            default -> null;
        };
    }

    private String in(ByteBuffer section, String sectionName, long offset) throws DwarfException {
        return section == null ? null : new Cursor(name + ": " + sectionName, section, 0, section.limit()).cstringAt(offset);
    }
}
