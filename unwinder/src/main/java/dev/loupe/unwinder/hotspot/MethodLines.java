package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.proc.ProcessMemory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.IntSupplier;

/**
 * The source position of a bci of a {@code Method*}, read as the serviceability agent reads it: the line from the
 * compressed line number table that follows the method's bytecodes in its {@code ConstMethod}
 * ({@link CompressedLineNumbers}; present when {@code ConstMethod}'s flags have the has-linenumber-table bit), the
 * file from the class's {@code SourceFile} attribute (the constant pool's {@code _source_file_name_index}, JDK 11+,
 * or {@code InstanceKlass}'s, JDK 8). Offsets, flag bit and sizes come from the JVM's own tables.
 *
 * <p>Decoded tables are cached per {@code Method*} within {@link #MAX_CACHED_BYTES}, files per constant pool; a
 * {@code Method*} freed by class unloading and reused keeps the old table, as its name does ({@link HotSpotJvm}).
 * Not thread-safe: its {@link HotSpotJvm} calls it under its lock.
 */
final class MethodLines {
    /** Heap for decoded tables of one JVM: a profile's hot methods are a few thousand at most. */
    static final long MAX_CACHED_BYTES = 4L << 20;
    static final int MAX_CACHED_FILES = 4096;
    /** The bytes read after a method's bytecodes for its table (1 to 11 a pair: thousands of lines; more are not read). */
    static final int MAX_TABLE_READ = 64 << 10;

    /**
     * Where a line comes from: {@code file} null and {@code line} 0 when unknown. {@code startLine}: the smallest line of
     * the method's table, its first statement, as async-profiler and JFR give a method's line (a class file records
     * no line for the declaration itself); 0 when it has no table.
     */
    record Position(String file, int line, int startLine) {
        static final Position UNKNOWN = new Position(null, 0, 0);
    }

    private record Fields(Layout.Scalar flags, long lineTableBit, Layout.Scalar codeSize, Layout.Scalar size,
                          long constMethodBytes, Layout.Scalar cpSourceFile, Layout.Scalar klassSourceFile) {}

    /** A method's table (null: none) and its holder's constant pool, for the file. */
    private record Entry(CompressedLineNumbers table, long cp, long bytes) {}

    private final ProcessMemory mem;
    private final Layout layout;
    private final MethodNames names;
    private final IntSupplier excluded;
    private final Fields f;
    private long cachedBytes;
    private final LinkedHashMap<Long, Entry> tables = new LinkedHashMap<>(256, 0.75f, true);
    private final Map<Long, String> files = new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, String> e) {
            return size() > MAX_CACHED_FILES;
        }
    };

    /**
     * @param excluded the CompressedStream format the JVM's nmethods were found to use (NmethodScopes#excluded), -1
     *                 while unknown; a table read before then is used only where both formats agree on it
     * @throws HotSpotException the JVM's table lacks a field this needs (then its frames have no lines)
     */
    MethodLines(ProcessMemory mem, VmStructs vs, Layout layout, MethodNames names, IntSupplier excluded) throws HotSpotException {
        this.mem = mem;
        this.layout = layout;
        this.names = names;
        this.excluded = excluded;
        boolean jdk21 = vs.field("ConstMethod", "_flags._flags").isPresent(); // ConstMethodFlags since JDK 21
        Layout.Scalar flags = Layout.scalar(vs, "ConstMethod", jdk21 ? "_flags._flags" : "_flags");
        Long bit = vs.intConstants().get(jdk21 ? "ConstMethodFlags::_misc_has_linenumber_table" : "ConstMethod::_has_linenumber_table");
        if (bit == null || bit == 0) {
            throw new HotSpotException("gHotSpotVMIntConstants has no has_linenumber_table flag");
        }
        Layout.Scalar codeSize = Layout.scalar(vs, "ConstMethod", "_code_size");
        Layout.Scalar size = Layout.scalar(vs, "ConstMethod", "_constMethod_size");
        long header = vs.sizeOf("ConstMethod");
        if (Math.max(flags.end(), Math.max(codeSize.end(), size.end())) > header) {
            throw new HotSpotException("ConstMethod fields lie beyond sizeof(ConstMethod) " + header);
        }
        Layout.Scalar cpFile = vs.field("ConstantPool", "_source_file_name_index").isPresent()
                ? Layout.scalar(vs, "ConstantPool", "_source_file_name_index") : null;
        Layout.Scalar klassFile = cpFile == null ? Layout.scalar(vs, "InstanceKlass", "_source_file_name_index") : null;
        if (cpFile != null && cpFile.end() > layout.cpSize) {
            throw new HotSpotException("ConstantPool::_source_file_name_index lies beyond sizeof(ConstantPool)");
        }
        this.f = new Fields(flags, bit, codeSize, size, header, cpFile, klassFile);
    }

    /** The position of {@code bci} in {@code method}; {@link Position#UNKNOWN} where unknown. IOException: unreadable. */
    Position at(long method, int bci) throws IOException {
        Entry e = entry(method);
        if (e == null) {
            return Position.UNKNOWN;
        }
        int line = e.table == null ? 0 : e.table.line(bci);
        int start = e.table == null ? 0 : e.table.firstLine();
        String file = file(e.cp);
        return file == null && line == 0 && start == 0 ? Position.UNKNOWN : new Position(file, line, start);
    }

    private Entry entry(long method) throws IOException {
        Entry e = tables.get(method);
        if (e != null) {
            return e;
        }
        if (!MethodNames.aligned(method)) {
            return null;
        }
        long cm = layout.methodConstMethod.get(mem.read(method, (int) layout.methodConstMethod.end()), 0);
        if (!MethodNames.aligned(cm)) {
            return null;
        }
        ByteBuffer h = mem.read(cm, (int) f.constMethodBytes);
        long cp = layout.constMethodConstants.get(h, 0);
        int codeSize = (int) f.codeSize.get(h, 0);
        long end = f.size.get(h, 0) * 8; // _constMethod_size is in words
        long start = f.constMethodBytes + codeSize;
        CompressedLineNumbers table = null;
        boolean known = true;
        if ((f.flags.get(h, 0) & f.lineTableBit) != 0 && end > start) {
            ByteBuffer b = mem.read(cm + start, (int) Math.min(end - start, MAX_TABLE_READ));
            int x = excluded.getAsInt();
            if (x >= 0) {
                table = CompressedLineNumbers.decode(b, codeSize, x);
            } else {
                CompressedLineNumbers one = CompressedLineNumbers.decode(b, codeSize, 1);
                CompressedLineNumbers zero = CompressedLineNumbers.decode(b.rewind(), codeSize, 0);
                if (one == null || zero == null || one.sameAs(zero)) {
                    table = one != null ? one : zero;
                } else {
                    known = false; // both formats read it, differently: not kept, so it is read again once one is learnt
                }
            }
        }
        e = new Entry(table, cp, 48 + (table == null ? 0 : table.bytes()));
        if (known) {
            tables.put(method, e);
            cachedBytes += e.bytes;
            var it = tables.values().iterator();
            while (cachedBytes > MAX_CACHED_BYTES && it.hasNext()) {
                cachedBytes -= it.next().bytes;
                it.remove();
            }
        }
        return known ? e : new Entry(null, cp, 0);
    }

    /** The class's SourceFile ("Wren.java") for its constant pool {@code cp}, or null. */
    private String file(long cp) throws IOException {
        if (files.containsKey(cp)) {
            return files.get(cp);
        }
        String name = null;
        if (MethodNames.aligned(cp)) {
            ByteBuffer pool = mem.read(cp, (int) layout.cpSize);
            long index;
            if (f.cpSourceFile != null) {
                index = f.cpSourceFile.get(pool, 0);
            } else {
                long holder = layout.cpPoolHolder.get(pool, 0);
                index = MethodNames.aligned(holder)
                        ? f.klassSourceFile.get(mem.read(holder, (int) f.klassSourceFile.end()), 0) : 0;
            }
            name = names.poolUtf8(cp, pool, index);
            if (name != null && name.isEmpty()) {
                name = null;
            }
        }
        files.put(cp, name);
        return name;
    }

    /** Heap held by the cached tables; for tests. */
    long cachedBytes() {
        return cachedBytes;
    }
}
