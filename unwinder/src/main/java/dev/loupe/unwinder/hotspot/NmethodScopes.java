package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.proc.ProcessMemory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The methods inlined at a pc of an nmethod, from its debug information as HotSpot itself reads it
 * (code/pcDesc.hpp, code/scopeDesc.cpp, code/debugInfoRec.hpp):
 * <ul>
 * <li>the nmethod's PcDescs, sorted by {@code _pc_offset} (from {@code code_begin()}), are searched for the first
 * at or after the pc, as {@code find_pc_desc(pc, approximate)} does: a return address has its own PcDesc, a
 * sampled pc the next safepoint's;</li>
 * <li>its {@code _scope_decode_offset} (0 = none) starts a scope record in the scopes data: sender offset, metadata
 * index of the method, bci, each a CompressedStream int; the sender is the record of the caller the scope was
 * inlined into, serialized before it (so at a smaller offset), 0 at the outermost;</li>
 * <li>the metadata index is 1-based into the nmethod's metadata array ({@code metadata_at}).</li>
 * </ul>
 * Where these live differs by JDK, and is taken from the JVM's own table, never its version: up to JDK 22
 * everything is inside the nmethod (CompiledMethod's {@code _scopes_data_begin}, or JDK 8's header-relative
 * {@code _scopes_data_offset}; header-relative
 * {@code _scopes_pcs_offset}, {@code _dependencies_offset} and {@code _metadata_offset}); from JDK 25 the PcDescs and
 * scopes are in the C-heap block {@code _immutable_data} and the metadata follows the relocations in
 * {@code _mutable_data}. The CompressedStream's integers lost the zero byte in JDK 21 (UNSIGNED5 with one excluded
 * byte, where older JDKs used all 256); which one a JVM uses is learnt from its first nmethod that decodes either
 * way to a chain ending in the nmethod's own method, which every chain must (the outermost scope is the compiled
 * method). A chain that does not is not reported: a wrong decode never names frames.
 */
final class NmethodScopes {
    static final int MAX_DEPTH = 64;
    static final long MAX_SECTION_BYTES = 16L << 20;
    private static final int RECORD_READ = 15; // three ints of at most five bytes each

    private final ProcessMemory mem;
    private final Layout.Scopes l;
    /** Bytes excluded from CompressedStream ints: 1 (JDK 21+), 0 (before), or -1 not yet learnt. */
    private int excluded = -1;

    NmethodScopes(ProcessMemory mem, Layout.Scopes layout) {
        this.mem = mem;
        this.l = layout;
    }

    /**
     * The {@code Method*}s of the scopes at {@code pc}, innermost first and the nmethod's own method last; a single
     * element when nothing is inlined there; null when the debug information is missing or does not hold together
     * (being freed, or a layout this reader does not know). IOException: the memory is unreadable.
     *
     * @param blob      the nmethod's address (its header)
     * @param codeBegin its {@code code_begin()}
     * @param method    its {@code _method}
     */
    long[] methodsAt(long blob, long codeBegin, long method, long pc) throws IOException {
        Chain c = scopesAt(blob, codeBegin, method, pc);
        return c == null ? null : c.methods;
    }

    /**
     * The scopes at a pc: their {@code Method*}s as {@link #methodsAt} gives them, and each one's bci (the call's in a
     * caller, the safepoint's in the leaf; -1 for the synchronization entry,
     * {@link Integer#MIN_VALUE} where none is recorded or for HotSpot's other special bcis).
     */
    record Chain(long[] methods, int[] bcis) {}

    /** As {@link #methodsAt}, with the bcis. */
    Chain scopesAt(long blob, long codeBegin, long method, long pc) throws IOException {
        long pcOffset = pc - codeBegin;
        if (pcOffset < 0 || pcOffset > Integer.MAX_VALUE) {
            return null;
        }
        ByteBuffer h = mem.read(blob, (int) l.headerBytes());
        Sections s = sections(blob, h);
        if (s == null) {
            return null;
        }
        PcDescs d = pcDescs(blob, l.compileId().get(h, 0), s);
        // The first PcDesc at or after the pc: a binary search, as the PcDescs are sorted by offset.
        int at = Arrays.binarySearch(d.pcOffsets, (int) pcOffset);
        if (at < 0) {
            at = -at - 1;
        } else {
            while (at > 0 && d.pcOffsets[at - 1] == pcOffset) {
                at--; // the first of equal offsets, as HotSpot's search finds
            }
        }
        if (at == d.pcOffsets.length) {
            return null;
        }
        long decode = d.decodeOffsets[at];
        if (decode == 0) {
            return new Chain(new long[] {method}, new int[] {Integer.MIN_VALUE}); // no scope here: the method, no bci
        }
        if (decode < 0 || decode >= s.dataEnd - s.dataBegin) {
            return null;
        }
        if (excluded >= 0) {
            return chain(s, decode, method, excluded);
        }
        for (int x : new int[] {1, 0}) {
            Chain c = chain(s, decode, method, x);
            if (c != null) {
                excluded = x;
                return c;
            }
        }
        return null;
    }

    /**
     * An nmethod's PcDescs as two sorted arrays, kept for the last {@link #MAX_CACHED_NMETHODS} nmethods looked up, so
     * that the many sampled pcs of one hot nmethod read its PcDescs once. An entry is for a blob address, compile id
     * and sections: a blob freed and reused by another compilation does not match it.
     */
    private record PcDescs(long compileId, Sections sections, int[] pcOffsets, int[] decodeOffsets) {}

    static final int MAX_CACHED_NMETHODS = 64;
    /** Larger nmethods' PcDescs are read for each lookup, not kept (at most 32 KiB of arrays an entry). */
    static final int MAX_CACHED_DESCS = 4096;
    private final Map<Long, PcDescs> pcDescs = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, PcDescs> e) {
            return size() > MAX_CACHED_NMETHODS;
        }
    };

    private PcDescs pcDescs(long blob, long compileId, Sections s) throws IOException {
        PcDescs d = pcDescs.get(blob);
        if (d != null && d.compileId == compileId && d.sections.equals(s)) {
            return d;
        }
        int n = (int) ((s.pcsEnd - s.pcsBegin) / l.pcDescSize());
        ByteBuffer pcs = mem.read(s.pcsBegin, (int) (s.pcsEnd - s.pcsBegin));
        int[] offsets = new int[n];
        int[] decodes = new int[n];
        for (int i = 0; i < n; i++) {
            offsets[i] = (int) l.pcOffset().get(pcs, i * (int) l.pcDescSize());
            decodes[i] = (int) l.scopeDecodeOffset().get(pcs, i * (int) l.pcDescSize());
        }
        d = new PcDescs(compileId, s, offsets, decodes);
        if (n <= MAX_CACHED_DESCS) {
            pcDescs.put(blob, d);
        }
        return d;
    }

    private record Sections(long pcsBegin, long pcsEnd, long dataBegin, long dataEnd, long metaBegin, long metaEnd) {}

    private Sections sections(long blob, ByteBuffer h) {
        long pcsBegin;
        long pcsEnd;
        long dataBegin;
        long dataEnd;
        long metaBegin;
        long metaEnd;
        if (l.immutableData() != null) {
            long imm = l.immutableData().get(h, 0);
            long mutable = l.mutableData().get(h, 0);
            pcsBegin = imm + l.scopesPcsOffset().get(h, 0);
            pcsEnd = imm + l.scopesDataOffset().get(h, 0);
            dataBegin = pcsEnd;
            dataEnd = imm + l.immutableDataSize().get(h, 0);
            metaBegin = mutable + l.relocationSize().get(h, 0);
            metaEnd = mutable + l.mutableDataSize().get(h, 0);
            if (imm <= 0 || mutable <= 0) {
                return null;
            }
        } else {
            pcsBegin = blob + l.scopesPcsOffset().get(h, 0);
            pcsEnd = blob + l.dependenciesOffset().get(h, 0);
            dataBegin = l.scopesDataBegin() != null ? l.scopesDataBegin().get(h, 0) : blob + l.scopesDataOffset().get(h, 0);
            dataEnd = pcsBegin;
            metaBegin = blob + l.metadataOffset().get(h, 0);
            metaEnd = dataBegin;
        }
        if (pcsEnd <= pcsBegin || pcsEnd - pcsBegin > MAX_SECTION_BYTES || (pcsEnd - pcsBegin) % l.pcDescSize() != 0
                || dataEnd < dataBegin || dataEnd - dataBegin > MAX_SECTION_BYTES || dataBegin <= 0
                || metaEnd < metaBegin || metaEnd - metaBegin > MAX_SECTION_BYTES || metaBegin <= 0) {
            return null;
        }
        return new Sections(pcsBegin, pcsEnd, dataBegin, dataEnd, metaBegin, metaEnd);
    }

    /** The chain from the scope at {@code decode}, if it ends in {@code method}; else null. */
    private Chain chain(Sections s, long decode, long method, int x) throws IOException {
        long[] out = new long[8];
        int[] bcis = new int[8];
        int n = 0;
        long at = decode;
        while (true) {
            if (n == MAX_DEPTH) {
                return null;
            }
            int len = (int) Math.min(RECORD_READ, s.dataEnd - s.dataBegin - at);
            ByteBuffer r = mem.read(s.dataBegin + at, len);
            int[] pos = {0};
            long sender = readInt(r, pos, x);
            long index = readInt(r, pos, x);
            long bci = readInt(r, pos, x); // written as bci - InvocationEntryBci (-1 in every JDK)
            if (sender < 0 || index < 1 || bci < 0 || (index - 1) * 8 + 8 > s.metaEnd - s.metaBegin) {
                return null;
            }
            long m = mem.readLong(s.metaBegin + (index - 1) * 8);
            if (m == 0 || (m & 7) != 0) {
                return null;
            }
            if (n == out.length) {
                out = Arrays.copyOf(out, n * 2);
                bcis = Arrays.copyOf(bcis, n * 2);
            }
            bcis[n] = bci <= 65_536 ? (int) bci - 1 : Integer.MIN_VALUE; // the special bcis below -1: no line
            out[n++] = m;
            if (sender == 0) {
                break;
            }
            if (sender >= at) {
                return null; // callers are serialized before their callees: a loop or garbage
            }
            at = sender;
        }
        return out[n - 1] == method ? new Chain(Arrays.copyOf(out, n), Arrays.copyOf(bcis, n)) : null;
    }

    /** Bytes excluded from CompressedStream ints as learnt from the first chain decoded (1 or 0), or -1 not yet. */
    int excluded() {
        return excluded;
    }

    /**
     * One CompressedStream int (UNSIGNED5: up to five bytes; a byte below {@code 256 - 64 - x} ends it, each
     * contributing {@code (b - x) << 6i}), or -1 past the buffer or at an excluded byte.
     */
    static long readInt(ByteBuffer b, int[] pos, int x) {
        int low = 256 - 64 - x;
        long sum = 0;
        int shift = 0;
        for (int i = 0; i < 5; i++) {
            if (pos[0] >= b.limit()) {
                return -1;
            }
            int v = b.get(pos[0]++) & 0xFF;
            if (v < x) {
                return -1;
            }
            sum += (long) (v - x) << shift;
            if (v < x + low) {
                return sum;
            }
            shift = i == 0 ? 6 : shift + 6;
        }
        return sum & 0xFFFF_FFFFL;
    }
}
