package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.proc.ProcessGoneException;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The JDK 25 seed with one lie each, read directly: each ends in the one clear outcome the readers promise (a
 * HotSpotException saying what, an empty name, no inlining chain), within bounded work. Each input also runs through
 * {@link HotSpotFuzzTarget} (every invariant of the fuzz target, the seam's one log line included).
 */
class HotSpotLiesTest {
    private static final long HEAPS_SLOT = SyntheticJvm.LIBJVM + 8L * SyntheticJvm.SYMBOLS.size();

    /** The seed's memory with {@code lie} applied, its input run through the fuzz target. */
    private static FakeProcessMemory lying(Consumer<FakeProcessMemory> lie) {
        FakeProcessMemory m = SyntheticJvm.decode(SyntheticJvm.image(SyntheticJvm.Flavour.JDK25));
        lie.accept(m);
        byte[] input = SyntheticJvm.encodeRegions(0, m.regions());
        HotSpotFuzzTarget.fuzzerTestOneInput(input);
        return SyntheticJvm.decode(input);
    }

    private static HotSpotJvm open(FakeProcessMemory m) throws Exception {
        return HotSpotJvm.read(HotSpotFuzzTarget.PID, m.reopened(), "/fake/libjvm.so", SyntheticJvm::symbol);
    }

    private static long read(FakeProcessMemory m, long address) throws Exception {
        return m.readLong(address);
    }

    /** CodeHeap i's address: CodeCache::_heaps, a GrowableArray {_len, _data}, its _data[i]. */
    private static long heap(FakeProcessMemory m, int i) throws Exception {
        long array = read(m, HEAPS_SLOT);
        return read(m, read(m, array + 8) + 8L * i);
    }

    private static String codeCacheFailure(FakeProcessMemory m) throws Exception {
        try (HotSpotJvm jvm = open(m)) {
            return assertThrows(HotSpotException.class, jvm::codeCache).getMessage();
        }
    }

    @Test
    void aHeapOfTerabytes() throws Exception {
        FakeProcessMemory m = lying(x -> poke(x, () -> heap(x, 0) + 24, 8, SyntheticJvm.CODE0 + (4L << 40)));
        String failure = codeCacheFailure(m);
        assertTrue(failure.contains("is not a sane committed range"), failure);
    }

    @Test
    void heapsThatOverlap() throws Exception {
        FakeProcessMemory m = lying(x -> poke(x, () -> read(x, read(x, HEAPS_SLOT) + 8) + 8, 8, uncheck(() -> heap(x, 0))));
        String failure = codeCacheFailure(m);
        assertTrue(failure.contains("overlaps"), failure);
    }

    @Test
    void heapsSpanningMoreThanACodeCache() throws Exception {
        // Heap 1 moved 3 GiB away (its memory unmapped there: the span is refused before any of it is read).
        FakeProcessMemory m = lying(x -> {
            long h1 = uncheck(() -> heap(x, 1));
            poke(x, () -> h1 + 16, 8, SyntheticJvm.CODE0 + (3L << 30));
            poke(x, () -> h1 + 24, 8, SyntheticJvm.CODE0 + (3L << 30) + 2048);
        });
        String failure = codeCacheFailure(m);
        assertTrue(failure.contains("more than a code cache's"), failure);
    }

    @Test
    void aCountOfTwoToTheThirtyOneHeaps() throws Exception {
        FakeProcessMemory m = lying(x -> poke(x, () -> read(x, HEAPS_SLOT), 4, Integer.MAX_VALUE));
        String failure = codeCacheFailure(m);
        assertTrue(failure.contains("_heaps has _len 2147483647"), failure);
    }

    /** 2 GiB at 16-byte segments: a segment map of 128 MiB, which the walk reads 1 MiB at a time, never whole. */
    @Test
    void aSegmentMapOf128MiBIsNeverHeldWhole() throws Exception {
        FakeProcessMemory m = lying(x -> {
            long h0 = uncheck(() -> heap(x, 0));
            poke(x, () -> read(x, HEAPS_SLOT), 4, 1);                           // heap 0 alone
            poke(x, () -> h0 + 24, 8, SyntheticJvm.CODE0 + (2L << 30));          // 2 GiB committed
            poke(x, () -> h0 + 136, 8, uncheck(() -> read(x, h0 + 128)) + ((2L << 30) >> 4)); // its segmap "covers" it
            poke(x, () -> h0 + 248, 4, 4);                                      // 16-byte segments
        });
        com.sun.management.ThreadMXBean t = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long before = t.getCurrentThreadAllocatedBytes();
        try (HotSpotJvm jvm = open(m)) {
            Exception e = assertThrows(Exception.class, jvm::codeCache);
            assertTrue(e instanceof HotSpotException || e instanceof java.io.IOException, e.toString());
        }
        long allocated = t.getCurrentThreadAllocatedBytes() - before;
        assertTrue(allocated < (16L << 20), "allocated " + allocated + " bytes reading a lying heap");
    }

    @Test
    void namePointersIntoUnmappedMemory() throws Exception {
        FakeProcessMemory m = lying(x -> poke(x, () -> read(x, SyntheticJvm.LIBJVM), 8, 0x10));
        HotSpotException e = assertThrows(HotSpotException.class, () -> open(m));
        assertTrue(e.getMessage().startsWith("gHotSpotVMStructs[0].typeName unreadable"), e.getMessage());
    }

    @Test
    void aTableWithoutEndIsReadTo20000EntriesInFewReads() throws Exception {
        // gHotSpotVMLongConstants pointed at a 1 MiB region of copies of one entry, named by a string it holds.
        FakeProcessMemory seed = SyntheticJvm.decode(SyntheticJvm.image(SyntheticJvm.Flavour.JDK25));
        List<FakeProcessMemory.Region> rs = new ArrayList<>(seed.regions());
        long endless = 0x6000_0000_0000L;
        byte[] bytes = new byte[1 << 20];
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(bytes).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        byte[] name = "LONG_CONSTANT\0".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        System.arraycopy(name, 0, bytes, bytes.length - 64, name.length);
        for (int i = 0; i + 16 <= bytes.length - 64; i += 16) {
            b.putLong(i, endless + bytes.length - 64);
            b.putLong(i + 8, 42);
        }
        rs.add(new FakeProcessMemory.Region(endless, bytes));
        FakeProcessMemory m = SyntheticJvm.decode(SyntheticJvm.encodeRegions(0, rs));
        m.poke(SyntheticJvm.symbol("gHotSpotVMLongConstants"), 8, endless);
        HotSpotFuzzTarget.fuzzerTestOneInput(SyntheticJvm.encodeRegions(0, m.regions()));
        FakeProcessMemory r = m.reopened();
        HotSpotException e = assertThrows(HotSpotException.class,
                () -> HotSpotJvm.read(HotSpotFuzzTarget.PID, r, "/fake/libjvm.so", SyntheticJvm::symbol));
        assertEquals("gHotSpotVMLongConstants: no terminating entry within " + VmStructs.MAX_ENTRIES, e.getMessage());
        assertTrue(r.reads() < 200, r.reads() + " reads for the tables and 20,000 entries");
    }

    @Test
    void aMethodWhosePointersAreItselfHasNoName() throws Exception {
        FakeProcessMemory m = SyntheticJvm.decode(SyntheticJvm.image(SyntheticJvm.Flavour.JDK25));
        long method;
        try (HotSpotJvm jvm = open(m)) {
            method = jvm.codeCache().blobs().get(2).method();
        }
        for (int off = 0; off < 88; off += 8) {
            m.poke(method + off, 8, method);
        }
        HotSpotFuzzTarget.fuzzerTestOneInput(SyntheticJvm.encodeRegions(0, m.regions()));
        try (HotSpotJvm jvm = open(m)) {
            assertTrue(jvm.methodName(method).isEmpty());
        }
    }

    @Test
    void aScopeThatIsItsOwnSenderIsNoChain() throws Exception {
        FakeProcessMemory m = SyntheticJvm.decode(SyntheticJvm.image(SyntheticJvm.Flavour.JDK25));
        try (HotSpotJvm jvm = open(m)) {
            CodeBlob outer = jvm.codeCache().blobs().get(2);
            assertEquals(3, jvm.scopeMethods(outer, outer.start() + 40).length);
            long imm = m.readLong(outer.address() + 96);
            int pcs = m.readInt(outer.address() + 200);
            // The innermost record (offset 7) names itself its sender: sender 7 is byte 8 (JDK 21+ adds one).
            m.poke(imm + pcs + 7, 1, 8);
        }
        HotSpotFuzzTarget.fuzzerTestOneInput(SyntheticJvm.encodeRegions(0, m.regions()));
        try (HotSpotJvm jvm = open(m)) {
            CodeBlob outer = jvm.codeCache().blobs().get(2);
            assertNull(jvm.scopeMethods(outer, outer.start() + 40));
        }
    }

    @Test
    void aProcessThatExitsWhileItsTablesAreReadIsGone() {
        byte[] input = SyntheticJvm.image(SyntheticJvm.Flavour.JDK25);
        input[1] = 5; // gone after 5 reads
        HotSpotFuzzTarget.fuzzerTestOneInput(input);
        assertThrows(ProcessGoneException.class, () -> open(SyntheticJvm.decode(input)));
    }

    interface Address {
        long get() throws Exception;
    }

    private static void poke(FakeProcessMemory m, Address at, int width, long value) {
        m.poke(uncheck(at::get), width, value);
    }

    private static long uncheck(Address a) {
        try {
            return a.get();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }
}
