package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.proc.ProcessGoneException;
import dev.loupe.unwinder.proc.ProcessMemory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * HotSpot's self-description as the serviceability agent reads it: the {@code gHotSpotVMStructs},
 * {@code gHotSpotVMTypes}, {@code gHotSpotVMIntConstants} and {@code gHotSpotVMLongConstants} arrays, whose entry
 * layouts are themselves given by exported {@code gHotSpotVM*Entry*Offset} and {@code *ArrayStride} variables.
 * Each array ends at an entry whose name pointer is null.
 */
final class VmStructs {
    /** A field of a HotSpot type: {@code offset} within the object, or for a static field its {@code address}. */
    record Field(String type, String name, String typeString, boolean isStatic, long offset, long address) {}

    record Type(String name, String superclass, long size) {}

    /** Entries an array may have: JDK 25's largest has under 1,000; a lying one is read no further. */
    static final int MAX_ENTRIES = 20_000;
    /** Entries are read this many bytes at a time (one pread per entry made a lying 100,000 cost seconds). */
    static final int CHUNK = 64 << 10;
    private static final int MAX_STRIDE = 1024;
    private static final int MAX_NAME = 1024;

    private final Map<String, Field> fields;
    private final Map<String, Type> types;
    private final Map<String, Long> intConstants;
    private final Map<String, Long> longConstants;

    private VmStructs(Map<String, Field> fields, Map<String, Type> types, Map<String, Long> ints, Map<String, Long> longs) {
        this.fields = fields;
        this.types = types;
        this.intConstants = ints;
        this.longConstants = longs;
    }

    /** Exported symbol name to runtime address: what {@link #read} needs from libjvm. */
    interface Symbols {
        long address(String name) throws HotSpotException;
    }

    static VmStructs read(ProcessMemory mem, Symbols syms) throws IOException, HotSpotException {
        CStrings strings = new CStrings(mem);
        Map<String, Field> fields = new LinkedHashMap<>();
        {
            long stride = layoutValue(mem, syms, "gHotSpotVMStructEntryArrayStride");
            int typeName = offset(mem, syms, "gHotSpotVMStructEntryTypeNameOffset", stride, 8);
            int fieldName = offset(mem, syms, "gHotSpotVMStructEntryFieldNameOffset", stride, 8);
            int typeString = offset(mem, syms, "gHotSpotVMStructEntryTypeStringOffset", stride, 8);
            int isStatic = offset(mem, syms, "gHotSpotVMStructEntryIsStaticOffset", stride, 4);
            int offsetOff = offset(mem, syms, "gHotSpotVMStructEntryOffsetOffset", stride, 8);
            int address = offset(mem, syms, "gHotSpotVMStructEntryAddressOffset", stride, 8);
            Entries entries = new Entries(mem, arrayBase(mem, syms, "gHotSpotVMStructs"), stride, "gHotSpotVMStructs");
            for (int i = 0; ; i++) {
                ByteBuffer e = entries.at(i);
                long tn = e.getLong(typeName);
                long fn = e.getLong(fieldName);
                if (tn == 0 && fn == 0) {
                    break;
                }
                if (tn == 0 || fn == 0) {
                    continue;
                }
                String t = string(strings, tn, "gHotSpotVMStructs[" + i + "].typeName");
                String f = string(strings, fn, "gHotSpotVMStructs[" + i + "].fieldName");
                long ts = e.getLong(typeString);
                String tstr = ts == 0 ? "" : string(strings, ts, "gHotSpotVMStructs[" + i + "].typeString");
                boolean st = e.getInt(isStatic) != 0;
                fields.put(t + "::" + f, new Field(t, f, tstr, st, e.getLong(offsetOff), e.getLong(address)));
            }
        }
        Map<String, Type> types = new LinkedHashMap<>();
        {
            long stride = layoutValue(mem, syms, "gHotSpotVMTypeEntryArrayStride");
            int typeName = offset(mem, syms, "gHotSpotVMTypeEntryTypeNameOffset", stride, 8);
            int superName = offset(mem, syms, "gHotSpotVMTypeEntrySuperclassNameOffset", stride, 8);
            int size = offset(mem, syms, "gHotSpotVMTypeEntrySizeOffset", stride, 8);
            Entries entries = new Entries(mem, arrayBase(mem, syms, "gHotSpotVMTypes"), stride, "gHotSpotVMTypes");
            for (int i = 0; ; i++) {
                ByteBuffer e = entries.at(i);
                long tn = e.getLong(typeName);
                if (tn == 0) {
                    break;
                }
                String t = string(strings, tn, "gHotSpotVMTypes[" + i + "].typeName");
                long sn = e.getLong(superName);
                String s = sn == 0 ? null : string(strings, sn, "gHotSpotVMTypes[" + i + "].superclassName");
                types.put(t, new Type(t, s, e.getLong(size)));
            }
        }
        Map<String, Long> ints = constants(mem, syms, strings, "Int", 4);
        Map<String, Long> longs = constants(mem, syms, strings, "Long", 8);
        return new VmStructs(Collections.unmodifiableMap(fields), Collections.unmodifiableMap(types), ints, longs);
    }

    private static Map<String, Long> constants(ProcessMemory mem, Symbols syms, CStrings strings, String kind, int width)
            throws IOException, HotSpotException {
        String prefix = "gHotSpotVM" + kind + "ConstantEntry";
        long stride = layoutValue(mem, syms, prefix + "ArrayStride");
        int nameOff = offset(mem, syms, prefix + "NameOffset", stride, 8);
        int valueOff = offset(mem, syms, prefix + "ValueOffset", stride, width);
        String array = "gHotSpotVM" + kind + "Constants";
        Entries entries = new Entries(mem, arrayBase(mem, syms, array), stride, array);
        Map<String, Long> out = new LinkedHashMap<>();
        for (int i = 0; ; i++) {
            ByteBuffer e = entries.at(i);
            long n = e.getLong(nameOff);
            if (n == 0) {
                break;
            }
            long v = width == 4 ? e.getInt(valueOff) : e.getLong(valueOff);
            out.put(string(strings, n, array + "[" + i + "].name"), v);
        }
        return Collections.unmodifiableMap(out);
    }

    /**
     * An array's entries, read {@link #CHUNK} bytes at a time; where a chunk reaches past mapped memory (the last one
     * of a real array may), a page at a time. {@link #at} gives entry {@code i} (in order) as a buffer of its stride.
     */
    private static final class Entries {
        private final ProcessMemory mem;
        private final long base;
        private final int stride;
        private final String array;
        private final int perChunk;
        private final ByteBuffer chunk;
        private int first = 0;
        private int count = 0;

        Entries(ProcessMemory mem, long base, long stride, String array) {
            this.mem = mem;
            this.base = base;
            this.stride = (int) stride;
            this.array = array;
            this.perChunk = Math.max(1, CHUNK / this.stride);
            this.chunk = ByteBuffer.allocate(perChunk * this.stride).order(ByteOrder.LITTLE_ENDIAN);
        }

        ByteBuffer at(int i) throws IOException, HotSpotException {
            if (i >= MAX_ENTRIES) {
                throw new HotSpotException(array + ": no terminating entry within " + MAX_ENTRIES);
            }
            if (i >= first + count) {
                first = i;
                int n = Math.min(perChunk, MAX_ENTRIES - i);
                chunk.clear().limit(n * stride);
                try {
                    mem.read(base + (long) i * stride, chunk);
                    count = n;
                } catch (ProcessGoneException e) {
                    throw e;
                } catch (IOException e) {
                    // Past mapped memory somewhere in the chunk: up to the end of the page this entry ends in (memory
                    // is mapped in pages), at least the entry itself.
                    long at = base + (long) i * stride;
                    long pageEnd = (at + stride + 4095) & -4096L;
                    int fit = (int) Math.max(1, Math.min(n, (pageEnd - at) / stride));
                    chunk.clear().limit(fit * stride);
                    mem.read(at, chunk);
                    count = fit;
                }
            }
            return chunk.slice((i - first) * stride, stride).order(ByteOrder.LITTLE_ENDIAN);
        }
    }

    private static long layoutValue(ProcessMemory mem, Symbols syms, String symbol) throws IOException, HotSpotException {
        long v = mem.readLong(syms.address(symbol));
        if (v <= 0 || v > MAX_STRIDE) {
            throw new HotSpotException(symbol + " is " + v + ", not a plausible entry size");
        }
        return v;
    }

    /** Where in an entry of {@code stride} bytes a field of {@code width} bytes is: all of it inside the entry. */
    private static int offset(ProcessMemory mem, Symbols syms, String symbol, long stride, int width) throws IOException, HotSpotException {
        long v = mem.readLong(syms.address(symbol));
        if (v < 0 || v > stride - width) {
            throw new HotSpotException(symbol + " is " + v + ": a field of " + width + " bytes there lies outside the entry's "
                    + stride + " bytes");
        }
        return (int) v;
    }

    private static long arrayBase(ProcessMemory mem, Symbols syms, String symbol) throws IOException, HotSpotException {
        long v = mem.readLong(syms.address(symbol));
        if (v == 0) {
            throw new HotSpotException(symbol + " is null (the JVM has not initialized its VMStructs yet?)");
        }
        return v;
    }

    private static String string(CStrings strings, long address, String what) throws HotSpotException, IOException {
        try {
            return strings.read(address, MAX_NAME);
        } catch (ProcessGoneException e) {
            throw e;
        } catch (IOException e) {
            throw new HotSpotException(what + " unreadable: " + e.getMessage());
        }
    }

    Map<String, Field> fields() {
        return fields;
    }

    Map<String, Type> types() {
        return types;
    }

    Map<String, Long> intConstants() {
        return intConstants;
    }

    Map<String, Long> longConstants() {
        return longConstants;
    }

    Optional<Field> field(String type, String name) {
        return Optional.ofNullable(fields.get(type + "::" + name));
    }

    /** A non-static field's offset; HotSpotException naming it if the table lacks it. */
    long offset(String type, String name) throws HotSpotException {
        Field f = fields.get(type + "::" + name);
        if (f == null) {
            throw new HotSpotException("gHotSpotVMStructs has no " + type + "::" + name);
        }
        if (f.isStatic()) {
            throw new HotSpotException("gHotSpotVMStructs: " + type + "::" + name + " is static, expected an instance field");
        }
        if (f.offset() < 0 || f.offset() > (1 << 20)) {
            throw new HotSpotException("gHotSpotVMStructs: " + type + "::" + name + " has offset " + f.offset());
        }
        return f.offset();
    }

    /** A static field's address. */
    long staticAddress(String type, String name) throws HotSpotException {
        Field f = fields.get(type + "::" + name);
        if (f == null) {
            throw new HotSpotException("gHotSpotVMStructs has no " + type + "::" + name);
        }
        if (!f.isStatic() || f.address() == 0) {
            throw new HotSpotException("gHotSpotVMStructs: " + type + "::" + name + " is not a static field with an address");
        }
        return f.address();
    }

    long sizeOf(String type) throws HotSpotException {
        Type t = types.get(type);
        if (t == null) {
            throw new HotSpotException("gHotSpotVMTypes has no " + type);
        }
        if (t.size() <= 0 || t.size() > (1 << 20)) {
            throw new HotSpotException("gHotSpotVMTypes: sizeof(" + type + ") is " + t.size());
        }
        return t.size();
    }
}
