package dev.loupe.unwinder.dwarf;

import java.util.Arrays;

/**
 * One unit's code scopes: its subprograms and inlined subroutines that have addresses, in DIE order (a pre-order of
 * the tree, lexical blocks looked through), each with its ranges, the DIE that names it, its call site and where its
 * subtree ends. Other DIEs are read past and not kept. A lookup walks from the unit's first scope into the ones holding
 * the pc, skipping whole subtrees that do not.
 */
final class UnitScopes {
    private final int n;
    private final int[] subtreeEnd; // scope i's descendants are i+1 .. subtreeEnd[i]-1
    private final int[] rangeFrom; // scope i's ranges are ranges[rangeFrom[i] .. rangeFrom[i+1]) as lo, hi pairs
    private final long[] ranges;
    private final long[] die; // the DIE to name scope i by (an inlined subroutine's abstract origin)
    private final long[] callFile;
    private final int[] callLine;
    private final boolean[] subprogram;

    private UnitScopes(int n, int[] subtreeEnd, int[] rangeFrom, long[] ranges, long[] die, long[] callFile, int[] callLine,
                       boolean[] subprogram) {
        this.n = n;
        this.subtreeEnd = subtreeEnd;
        this.rangeFrom = rangeFrom;
        this.ranges = ranges;
        this.die = die;
        this.callFile = callFile;
        this.callLine = callLine;
        this.subprogram = subprogram;
    }

    /** Decodes {@code u}'s DIE tree; a unit whose scopes would take more than {@code room} bytes is refused. */
    static UnitScopes decode(DieReader r, DebugInfo.Unit u, DebugAbbrev abbrevs, DwarfRanges rangeReader, long room)
            throws DwarfException {
        Cursor c = r.cursor(u.dieStart(), u.end());
        int cap = 64;
        int n = 0;
        int[] subtreeEnd = new int[cap];
        int[] rangeFrom = new int[cap + 1];
        long[] die = new long[cap];
        long[] callFile = new long[cap];
        int[] callLine = new int[cap];
        boolean[] subprogram = new boolean[cap];
        DwarfRanges.Pairs pairs = new DwarfRanges.Pairs();
        int[] open = new int[64]; // for each open DIE with children: its scope index, or -1
        int depth = 0;
        while (c.pos < u.end()) { // every DIE consumes its code's bytes: bounded by the unit's size
            DieReader.Die d = r.read(c, u, abbrevs);
            if (d == null) {
                if (depth > 0) {
                    depth--;
                    if (open[depth] >= 0) {
                        subtreeEnd[open[depth]] = n;
                    }
                }
                if (depth == 0) {
                    break; // the unit DIE's children ended; what follows is padding
                }
                continue;
            }
            int scope = -1;
            if ((d.tag == DebugInfo.DW_TAG_SUBPROGRAM || d.tag == DebugInfo.DW_TAG_INLINED_SUBROUTINE) && d.hasCode()) {
                int before = pairs.n;
                d.ranges(u, rangeReader, pairs);
                if (pairs.n > before) {
                    if (n == cap) {
                        cap *= 2;
                        subtreeEnd = Arrays.copyOf(subtreeEnd, cap);
                        rangeFrom = Arrays.copyOf(rangeFrom, cap + 1);
                        die = Arrays.copyOf(die, cap);
                        callFile = Arrays.copyOf(callFile, cap);
                        callLine = Arrays.copyOf(callLine, cap);
                        subprogram = Arrays.copyOf(subprogram, cap);
                    }
                    scope = n++;
                    rangeFrom[scope] = before;
                    rangeFrom[scope + 1] = pairs.n;
                    subtreeEnd[scope] = n;
                    die[scope] = d.origin >= 0 ? d.origin : d.offset;
                    callFile[scope] = d.callFile;
                    callLine[scope] = (int) Math.min(Integer.MAX_VALUE, Math.max(0, d.callLine));
                    subprogram[scope] = d.tag == DebugInfo.DW_TAG_SUBPROGRAM;
                    if (bytes(cap, pairs.v.length) > room) {
                        throw c.error("unit at " + u.offset() + " has more scopes than a " + room + "-byte budget holds");
                    }
                }
            }
            if (d.children) {
                if (depth == open.length) {
                    open = Arrays.copyOf(open, depth * 2);
                }
                open[depth++] = scope;
            }
        }
        while (depth > 0) { // a unit cut short: close what is open
            depth--;
            if (open[depth] >= 0) {
                subtreeEnd[open[depth]] = n;
            }
        }
        return new UnitScopes(n, subtreeEnd, rangeFrom, Arrays.copyOf(pairs.v, pairs.n), die, callFile, callLine, subprogram);
    }

    private static long bytes(int scopes, int rangeLongs) {
        return 64 + scopes * 33L + rangeLongs * 8L;
    }

    /** The scopes holding {@code pc}, outermost first, starting at the innermost subprogram among them. */
    int[] at(long pc) {
        int[] chain = new int[8];
        int k = 0;
        int limit = n;
        for (int i = 0; i < limit; ) { // i only grows: bounded by the scope count
            if (contains(i, pc)) {
                if (k == chain.length) {
                    chain = Arrays.copyOf(chain, k * 2);
                }
                chain[k++] = i;
                limit = Math.min(limit, subtreeEnd[i]);
                i++;
            } else {
                i = Math.max(i + 1, subtreeEnd[i]);
            }
        }
        int from = 0;
        for (int j = k - 1; j >= 0; j--) {
            if (subprogram[chain[j]]) {
                from = j;
                break;
            }
        }
        return Arrays.copyOfRange(chain, from, k);
    }

    private boolean contains(int i, long pc) {
        for (int r = rangeFrom[i]; r < rangeFrom[i + 1]; r += 2) {
            if (Long.compareUnsigned(pc, ranges[r]) >= 0 && Long.compareUnsigned(pc, ranges[r + 1]) < 0) {
                return true;
            }
        }
        return false;
    }

    long die(int i) {
        return die[i];
    }

    long callFile(int i) {
        return callFile[i];
    }

    int callLine(int i) {
        return callLine[i];
    }

    int size() {
        return n;
    }

    /** Estimated heap. */
    long bytes() {
        return bytes(subtreeEnd.length, ranges.length);
    }
}
