package dev.loupe.unwinder.hotspot;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Synthetic HotSpot processes for the fuzz targets: the memory image of a small JVM, well-formed as a JDK 25 or a JDK 17
 * lays it out (the field offsets, type strings and sizes are those of the real JVMs' own tables: see
 * HotSpotFuzzTest's check against the running JDK), and the encoding of such an image as a fuzz input.
 *
 * <p>The input: byte 0, the number of regions (mod {@value #MAX_REGIONS} + 1); bytes 1-2, after how many reads the
 * "process" exits (little-endian, 0: never); then per region its base (8 bytes) and length (4), little-endian;
 * then the regions' bytes one after another (a region the input cuts short is shorter). libjvm's exported symbols
 * are at fixed addresses: symbol {@code i} of {@link #SYMBOLS} is at {@code LIBJVM + 8 * i}, where the first region
 * of a well-formed image holds their values.
 *
 * <p>The image: libjvm's data (the symbols' values, the static fields, the four VMStructs arrays and their strings),
 * a C heap (the code heaps' GrowableArray and CodeHeaps, segment maps, Methods, ConstMethods, a ConstantPool, Symbols,
 * a Klass, the nmethods' debug information) and two code heaps: in the first the interpreter, a runtime stub, a free
 * block and the nmethod of {@code HotSpotTarget.outer} with {@code inner} and {@code mid} inlined into it; in the
 * second the nmethod of {@code spinA} and an adapter.
 */
final class SyntheticJvm {
    static final long LIBJVM = 0x7f3a_1000_0000L;
    static final long CHEAP = 0x5555_7000_0000L;
    static final long CODE0 = 0x7f3a_4000_0000L;
    static final long CODE1 = 0x7f3a_4010_0000L;
    static final int MAX_REGIONS = 8;
    static final int LOG2_SEGMENT = 6;

    /** libjvm's symbols the readers ask for, in slot order. */
    static final List<String> SYMBOLS = List.of(
            "gHotSpotVMStructs", "gHotSpotVMStructEntryArrayStride", "gHotSpotVMStructEntryTypeNameOffset",
            "gHotSpotVMStructEntryFieldNameOffset", "gHotSpotVMStructEntryTypeStringOffset",
            "gHotSpotVMStructEntryIsStaticOffset", "gHotSpotVMStructEntryOffsetOffset", "gHotSpotVMStructEntryAddressOffset",
            "gHotSpotVMTypes", "gHotSpotVMTypeEntryArrayStride", "gHotSpotVMTypeEntryTypeNameOffset",
            "gHotSpotVMTypeEntrySuperclassNameOffset", "gHotSpotVMTypeEntryIsOopTypeOffset",
            "gHotSpotVMTypeEntryIsIntegerTypeOffset", "gHotSpotVMTypeEntryIsUnsignedOffset", "gHotSpotVMTypeEntrySizeOffset",
            "gHotSpotVMIntConstants", "gHotSpotVMIntConstantEntryArrayStride", "gHotSpotVMIntConstantEntryNameOffset",
            "gHotSpotVMIntConstantEntryValueOffset",
            "gHotSpotVMLongConstants", "gHotSpotVMLongConstantEntryArrayStride", "gHotSpotVMLongConstantEntryNameOffset",
            "gHotSpotVMLongConstantEntryValueOffset",
            "_ZTV8CodeBlob", "_ZTV11RuntimeBlob", "_ZTV10BufferBlob", "_ZTV11AdapterBlob", "_ZTV11RuntimeStub",
            "_ZTV14CompiledMethod", "_ZTV7nmethod");

    /** The runtime address of libjvm's {@code name}, or -1 if it exports none. */
    static long symbol(String name) {
        int i = SYMBOLS.indexOf(name);
        return i < 0 ? -1 : LIBJVM + 8L * i;
    }

    enum Flavour { JDK25, JDK17 }

    /** The methods of the image and the names the readers must give them. */
    static final List<String> METHODS = List.of("outer", "inner", "mid", "spinA");
    static final String CLASS = "HotSpotTarget";

    // ---------------- the tables ----------------

    /** "Type::field|type string|offset" (offset "static": a static field, its address one of libjvm's slots). */
    private static final String JDK25_FIELDS = """
            CodeCache::_heaps|GrowableArray<CodeHeap*>*|static
            GrowableArrayBase::_len|int|0
            GrowableArray<int>::_data|int*|8
            CodeHeap::_memory|VirtualSpace|0
            CodeHeap::_segmap|VirtualSpace|112
            CodeHeap::_log2_segment_size|int|248
            VirtualSpace::_low|char*|16
            VirtualSpace::_high|char*|24
            HeapBlock::_header|HeapBlock::Header|0
            HeapBlock::Header::_length|uint32_t|0
            HeapBlock::Header::_used|bool|4
            CodeBlob::_name|const char*|8
            CodeBlob::_mutable_data|address|16
            CodeBlob::_size|int|24
            CodeBlob::_relocation_size|int|28
            CodeBlob::_code_offset|int|36
            CodeBlob::_data_offset|int|40
            CodeBlob::_frame_size|int|44
            CodeBlob::_mutable_data_size|int|48
            CodeBlob::_frame_complete_offset|int16_t|54
            CodeBlob::_kind|CodeBlobKind|56
            nmethod::_method|Method*|80
            nmethod::_immutable_data|address|96
            nmethod::_immutable_data_size|int|160
            nmethod::_scopes_pcs_offset|int|196
            nmethod::_scopes_data_offset|int|200
            nmethod::_compile_id|int|212
            Method::_constMethod|ConstMethod*|8
            ConstMethod::_constants|ConstantPool*|8
            ConstMethod::_code_size|u2|34
            ConstMethod::_name_index|u2|36
            ConstantPool::_tags|Array<u1>*|8
            ConstantPool::_pool_holder|InstanceKlass*|24
            ConstantPool::_length|int|60
            Array<u1>::_data||4
            Klass::_name|Symbol*|24
            Symbol::_length|u2|4
            Symbol::_body||6
            Abstract_VM_Version::_s_vm_release|const char*|static
            PcDesc::_pc_offset|int|0
            PcDesc::_scope_decode_offset|int|4
            AbstractInterpreter::_code|StubQueue*|static
            StubQueue::_stub_buffer|address|8
            StubQueue::_queue_begin|int|24
            StubQueue::_queue_end|int|28
            InterpreterCodelet::_description|const char*|0
            InterpreterCodelet::_size|int|8
            """;

    /** "Type|superclass|size". */
    private static final String JDK25_TYPES = """
            CodeHeap||336
            VirtualSpace||112
            HeapBlock||8
            CodeBlob||64
            RuntimeBlob|CodeBlob|64
            BufferBlob|RuntimeBlob|64
            AdapterBlob|BufferBlob|64
            RuntimeStub|RuntimeBlob|64
            nmethod|CodeBlob|224
            MetaspaceObj||1
            Metadata|MetaspaceObj|8
            Method|Metadata|88
            ConstMethod|MetaspaceObj|56
            ConstantPool|Metadata|72
            Klass|Metadata|200
            InstanceKlass|Klass|472
            Symbol||8
            Array<u1>|MetaspaceObj|8
            PcDesc||16
            StubQueue||48
            Stub||1
            InterpreterCodelet|Stub|16
            """;

    private static final String JDK25_INTS = """
            CodeBlobKind::Nmethod|1
            CodeBlobKind::Buffer|2
            CodeBlobKind::Adapter|3
            CodeBlobKind::Vtable|4
            CodeBlobKind::MHAdapter|5
            CodeBlobKind::RuntimeStub|6
            JVM_CONSTANT_Utf8|1
            """;

    private static final String JDK17_FIELDS = """
            CodeCache::_heaps|GrowableArray<CodeHeap*>*|static
            GrowableArrayBase::_len|int|0
            GrowableArray<int>::_data|int*|8
            CodeHeap::_memory|VirtualSpace|8
            CodeHeap::_segmap|VirtualSpace|120
            CodeHeap::_log2_segment_size|int|256
            VirtualSpace::_low|char*|16
            VirtualSpace::_high|char*|24
            HeapBlock::_header|HeapBlock::Header|0
            HeapBlock::Header::_length|size_t|0
            HeapBlock::Header::_used|bool|8
            CodeBlob::_size|int|12
            CodeBlob::_frame_complete_offset|int|20
            CodeBlob::_data_offset|int|24
            CodeBlob::_frame_size|int|28
            CodeBlob::_code_begin|address|32
            CodeBlob::_code_end|address|40
            CodeBlob::_name|const char*|96
            CompiledMethod::_method|Method*|112
            CompiledMethod::_scopes_data_begin|address|120
            nmethod::_metadata_offset|int|260
            nmethod::_scopes_pcs_offset|int|268
            nmethod::_dependencies_offset|int|272
            nmethod::_compile_id|int|304
            Method::_constMethod|ConstMethod*|8
            ConstMethod::_constants|ConstantPool*|8
            ConstMethod::_code_size|u2|32
            ConstMethod::_name_index|u2|34
            ConstantPool::_tags|Array<u1>*|8
            ConstantPool::_pool_holder|InstanceKlass*|24
            ConstantPool::_length|int|60
            Array<u1>::_data||4
            Klass::_name|Symbol*|24
            Symbol::_length|u2|4
            Symbol::_body||6
            Abstract_VM_Version::_s_vm_release|const char*|static
            PcDesc::_pc_offset|int|0
            PcDesc::_scope_decode_offset|int|4
            AbstractInterpreter::_code|StubQueue*|static
            StubQueue::_stub_buffer|address|8
            StubQueue::_queue_begin|int|24
            StubQueue::_queue_end|int|28
            InterpreterCodelet::_description|const char*|0
            InterpreterCodelet::_size|int|8
            """;

    private static final String JDK17_TYPES = """
            CodeHeap||344
            VirtualSpace||112
            HeapBlock||16
            CodeBlob||104
            RuntimeBlob|CodeBlob|104
            BufferBlob|RuntimeBlob|104
            AdapterBlob|BufferBlob|104
            RuntimeStub|RuntimeBlob|104
            CompiledMethod|CodeBlob|192
            nmethod|CompiledMethod|352
            MetaspaceObj||4
            Metadata|MetaspaceObj|8
            Method|Metadata|88
            ConstMethod|MetaspaceObj|48
            ConstantPool|Metadata|72
            Klass|Metadata|208
            InstanceKlass|Klass|464
            Symbol||8
            Array<u1>|MetaspaceObj|8
            PcDesc||16
            StubQueue||48
            Stub||1
            InterpreterCodelet|Stub|16
            """;

    private static final String JDK17_INTS = """
            JVM_CONSTANT_Utf8|1
            """;

    /** A table's field: its type string and offset, or a static field's address. */
    record FieldDef(String type, String name, String typeString, boolean isStatic, long offset) {}

    static List<FieldDef> fields(Flavour f) {
        List<FieldDef> out = new ArrayList<>();
        for (String line : (f == Flavour.JDK25 ? JDK25_FIELDS : JDK17_FIELDS).strip().split("\n")) {
            String[] p = line.split("\\|", -1);
            int sep = p[0].lastIndexOf("::");
            boolean st = p[2].equals("static");
            out.add(new FieldDef(p[0].substring(0, sep), p[0].substring(sep + 2), p[1], st, st ? 0 : Long.parseLong(p[2])));
        }
        return out;
    }

    /** Type name to {superclass or "", size}. */
    static Map<String, String[]> types(Flavour f) {
        Map<String, String[]> out = new LinkedHashMap<>();
        for (String line : (f == Flavour.JDK25 ? JDK25_TYPES : JDK17_TYPES).strip().split("\n")) {
            String[] p = line.split("\\|", -1);
            out.put(p[0], new String[] {p[1], p[2]});
        }
        return out;
    }

    static Map<String, Long> ints(Flavour f) {
        Map<String, Long> out = new LinkedHashMap<>();
        for (String line : (f == Flavour.JDK25 ? JDK25_INTS : JDK17_INTS).strip().split("\n")) {
            String[] p = line.split("\\|", -1);
            out.put(p[0], Long.parseLong(p[1]));
        }
        return out;
    }

    // ---------------- the image ----------------

    /** Bytes at a base address, allocated upwards. */
    static final class Space {
        final long base;
        private ByteBuffer buf = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
        private int top;
        private final Map<String, Long> strings = new HashMap<>();

        Space(long base, int reserve) {
            this.base = base;
            this.top = reserve;
        }

        long alloc(int size, int align) {
            top = (top + align - 1) & -align;
            long at = base + top;
            top += size;
            return at;
        }

        long cstring(String s) {
            Long known = strings.get(s);
            if (known != null) {
                return known;
            }
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            long at = alloc(b.length + 1, 1);
            for (int i = 0; i < b.length; i++) {
                buf.put((int) (at - base) + i, b[i]);
            }
            strings.put(s, at);
            return at;
        }

        void put(long at, int width, long v) {
            int i = (int) (at - base);
            switch (width) {
                case 1 -> buf.put(i, (byte) v);
                case 2 -> buf.putShort(i, (short) v);
                case 4 -> buf.putInt(i, (int) v);
                default -> buf.putLong(i, v);
            }
        }

        void putBytes(long at, byte[] b) {
            for (int i = 0; i < b.length; i++) {
                buf.put((int) (at - base) + i, b[i]);
            }
        }

        /** Makes the space {@code size} bytes long (no less than used). */
        void size(int size) {
            if (size < top) {
                throw new IllegalStateException("space at 0x" + Long.toHexString(base) + " uses " + top + " > " + size);
            }
            top = size;
        }

        byte[] bytes() {
            return java.util.Arrays.copyOf(buf.array(), top);
        }
    }

    /** Writes objects by their table's field names. */
    private static final class Writer {
        final Map<String, FieldDef> fields = new HashMap<>();
        final Map<String, String[]> types;

        Writer(Flavour f) {
            for (FieldDef d : fields(f)) {
                fields.put(d.type() + "::" + d.name(), d);
            }
            types = types(f);
        }

        long offset(String field) {
            return fields.get(field).offset();
        }

        int size(String type) {
            return Integer.parseInt(types.get(type)[1]);
        }

        boolean has(String field) {
            return fields.containsKey(field);
        }

        void set(Space s, long object, String field, long v) {
            FieldDef d = fields.get(field);
            if (d == null) {
                throw new IllegalArgumentException("no " + field);
            }
            s.put(object + d.offset(), width(d.typeString()), v);
        }

        static int width(String t) {
            return switch (t.replace("const ", "").replace("volatile ", "").trim()) {
                case "bool", "u1", "CodeBlobKind" -> 1;
                case "u2", "int16_t" -> 2;
                case "int", "uint32_t", "jint" -> 4;
                default -> 8;
            };
        }
    }

    /** The image of a well-formed JVM of flavour {@code f}, as a fuzz input. */
    static byte[] image(Flavour f) {
        Writer w = new Writer(f);
        Space lib = new Space(LIBJVM, 8 * SYMBOLS.size());
        Space heap = new Space(CHEAP, 0);
        Space code0 = new Space(CODE0, 0);
        Space code1 = new Space(CODE1, 0);

        // Static fields: slots in libjvm's data.
        long heapsSlot = lib.alloc(8, 8);
        long releaseSlot = lib.alloc(8, 8);
        long interpreterSlot = lib.alloc(8, 8);

        // VMStructs: 48-byte entries (type name, field name, type string, is-static, offset, address), as HotSpot's.
        List<FieldDef> fs = fields(f);
        long structs = lib.alloc(48 * (fs.size() + 1), 8);
        for (int i = 0; i < fs.size(); i++) {
            FieldDef d = fs.get(i);
            long e = structs + 48L * i;
            lib.put(e, 8, lib.cstring(d.type()));
            lib.put(e + 8, 8, lib.cstring(d.name()));
            lib.put(e + 16, 8, d.typeString().isEmpty() ? 0 : lib.cstring(d.typeString()));
            lib.put(e + 24, 4, d.isStatic() ? 1 : 0);
            lib.put(e + 32, 8, d.offset());
            long address = 0;
            if (d.isStatic()) {
                address = d.name().equals("_heaps") ? heapsSlot : d.name().equals("_code") ? interpreterSlot : releaseSlot;
            }
            lib.put(e + 40, 8, address);
        }
        Map<String, String[]> ts = types(f);
        long types = lib.alloc(40 * (ts.size() + 1), 8);
        int ti = 0;
        for (Map.Entry<String, String[]> t : ts.entrySet()) {
            long e = types + 40L * ti++;
            lib.put(e, 8, lib.cstring(t.getKey()));
            lib.put(e + 8, 8, t.getValue()[0].isEmpty() ? 0 : lib.cstring(t.getValue()[0]));
            lib.put(e + 32, 8, Long.parseLong(t.getValue()[1]));
        }
        Map<String, Long> is = ints(f);
        long ints = lib.alloc(16 * (is.size() + 1), 8);
        int ii = 0;
        for (Map.Entry<String, Long> c : is.entrySet()) {
            long e = ints + 16L * ii++;
            lib.put(e, 8, lib.cstring(c.getKey()));
            lib.put(e + 8, 4, c.getValue());
        }
        long longs = lib.alloc(16, 8); // only the terminating entry
        long[] values = {structs, 48, 0, 8, 16, 24, 32, 40, types, 40, 0, 8, 16, 20, 24, 32, ints, 16, 0, 8, longs, 16, 0, 8};
        for (int i = 0; i < values.length; i++) {
            lib.put(LIBJVM + 8L * i, 8, values[i]);
        }
        lib.put(releaseSlot, 8, lib.cstring(f == Flavour.JDK25 ? "25.0.1+8-LTS-synthetic" : "17.0.16+8-synthetic"));

        // Metadata: one class, its constant pool holding the names at indices 1.., and a Method per name.
        int cpLength = METHODS.size() + 2;
        long classSymbol = symbol(heap, CLASS);
        long klass = heap.alloc(32, 8);
        w.set(heap, klass, "Klass::_name", classSymbol);
        long tags = heap.alloc(4 + cpLength, 8);
        heap.put(tags, 4, cpLength);
        long cpSize = w.size("ConstantPool");
        long cp = heap.alloc((int) cpSize + 8 * cpLength, 8);
        w.set(heap, cp, "ConstantPool::_tags", tags);
        w.set(heap, cp, "ConstantPool::_pool_holder", klass);
        w.set(heap, cp, "ConstantPool::_length", cpLength);
        Map<String, Long> methods = new LinkedHashMap<>();
        for (int i = 0; i < METHODS.size(); i++) {
            int index = i + 1;
            heap.put(tags + w.offset("Array<u1>::_data") + index, 1, 1); // JVM_CONSTANT_Utf8
            heap.put(cp + cpSize + 8L * index, 8, symbol(heap, METHODS.get(i)));
            long constMethod = heap.alloc(w.size("ConstMethod"), 8);
            w.set(heap, constMethod, "ConstMethod::_constants", cp);
            w.set(heap, constMethod, "ConstMethod::_name_index", index);
            long method = heap.alloc(w.size("Method"), 8);
            w.set(heap, method, "Method::_constMethod", constMethod);
            methods.put(METHODS.get(i), method);
        }
        heap.put(tags + w.offset("Array<u1>::_data") + METHODS.size() + 1, 1, 1);
        heap.put(cp + cpSize + 8L * (METHODS.size() + 1), 8, classSymbol);

        // The code heaps: GrowableArray<CodeHeap*> {_len, _data} and its two CodeHeaps.
        int heapBlock = w.size("HeapBlock");
        int seg = 1 << LOG2_SEGMENT;
        code0.size(4096);
        code1.size(2048);
        byte[] segmap0 = freeSegmap(4096 >> LOG2_SEGMENT);
        byte[] segmap1 = freeSegmap(2048 >> LOG2_SEGMENT);
        Blobs b0 = new Blobs(f, w, lib, heap, code0, segmap0, heapBlock, seg);
        long interpreter = b0.buffer(8, "Interpreter", 0, -1, 300) + w.size("BufferBlob");
        // The interpreter's StubQueue: two codelets of 128 bytes (header included) at the start of its 300 bytes of code.
        long queue = heap.alloc(w.size("StubQueue"), 8);
        w.set(heap, queue, "StubQueue::_stub_buffer", interpreter);
        w.set(heap, queue, "StubQueue::_queue_begin", 0);
        w.set(heap, queue, "StubQueue::_queue_end", 256);
        lib.put(interpreterSlot, 8, queue);
        String[] codelets = {"method entry point (kind = zerolocals)", "invokevirtual"};
        for (int i = 0; i < codelets.length; i++) {
            w.set(code0, interpreter + 128L * i, "InterpreterCodelet::_description", lib.cstring(codelets[i]));
            w.set(code0, interpreter + 128L * i, "InterpreterCodelet::_size", 128);
        }
        b0.stub(4, "_complete_monitor_locking_Java", 4, 8);
        b0.free(2);
        b0.nmethod(16, methods.get("outer"), List.of(methods.get("outer"), methods.get("inner"), methods.get("mid")), 6, 16, 42);
        Blobs b1 = new Blobs(f, w, lib, heap, code1, segmap1, heapBlock, seg);
        b1.nmethod(16, methods.get("spinA"), List.of(methods.get("spinA")), 4, 8, 7);
        b1.adapter(4, "I2C/C2I adapters");

        long array = heap.alloc(16, 8);
        long data = heap.alloc(16, 8);
        w.set(heap, array, "GrowableArrayBase::_len", 2);
        w.set(heap, array, "GrowableArray<int>::_data", data);
        lib.put(heapsSlot, 8, array);
        long[] codeBases = {CODE0, CODE1};
        int[] codeSizes = {4096, 2048};
        byte[][] segmaps = {segmap0, segmap1};
        for (int h = 0; h < 2; h++) {
            long ch = heap.alloc(w.size("CodeHeap"), 8);
            heap.put(data + 8L * h, 8, ch);
            long memory = ch + w.offset("CodeHeap::_memory");
            w.set(heap, memory, "VirtualSpace::_low", codeBases[h]);
            w.set(heap, memory, "VirtualSpace::_high", codeBases[h] + codeSizes[h]);
            long segmap = heap.alloc(segmaps[h].length, 8);
            heap.putBytes(segmap, segmaps[h]);
            long sm = ch + w.offset("CodeHeap::_segmap");
            w.set(heap, sm, "VirtualSpace::_low", segmap);
            w.set(heap, sm, "VirtualSpace::_high", segmap + segmaps[h].length);
            w.set(heap, ch, "CodeHeap::_log2_segment_size", LOG2_SEGMENT);
        }
        return encode(0, List.of(lib, heap, code0, code1));
    }

    private static long symbol(Space heap, String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        long sym = heap.alloc(6 + b.length, 8);
        heap.put(sym + 4, 2, b.length);
        heap.putBytes(sym + 6, b);
        return sym;
    }

    private static byte[] freeSegmap(int segments) {
        byte[] m = new byte[segments];
        java.util.Arrays.fill(m, (byte) 0xFF);
        return m;
    }

    /** Lays blocks out in a code heap, from its start, marking the segment map. */
    private static final class Blobs {
        final Flavour f;
        final Writer w;
        final Space lib;
        final Space heap;
        final Space code;
        final byte[] segmap;
        final int heapBlock;
        final int seg;
        int next; // segment

        Blobs(Flavour f, Writer w, Space lib, Space heap, Space code, byte[] segmap, int heapBlock, int seg) {
            this.f = f;
            this.w = w;
            this.lib = lib;
            this.heap = heap;
            this.code = code;
            this.segmap = segmap;
            this.heapBlock = heapBlock;
            this.seg = seg;
        }

        /** A block of {@code segments}, used or free; its address. */
        long block(int segments, boolean used) {
            long block = code.base + (long) next * seg;
            for (int i = 0; i < segments; i++) {
                segmap[next + i] = (byte) Math.min(i, 0xFE);
            }
            next += segments;
            w.set(code, block + w.offset("HeapBlock::_header"), "HeapBlock::Header::_length", segments);
            w.set(code, block + w.offset("HeapBlock::_header"), "HeapBlock::Header::_used", used ? 1 : 0);
            return block;
        }

        void free(int segments) {
            block(segments, false);
        }

        /** A blob of class {@code cls} ({@code kind}: JDK 25's CodeBlobKind), its code [blob + codeOffset, blob + dataOffset). */
        long blob(int segments, String cls, int kind, String name, int frameWords, int frameComplete, int codeOffset, int dataOffset) {
            long blob = block(segments, true) + heapBlock;
            w.set(code, blob, "CodeBlob::_name", lib.cstring(name));
            w.set(code, blob, "CodeBlob::_size", (long) segments * seg - heapBlock);
            w.set(code, blob, "CodeBlob::_frame_size", frameWords);
            w.set(code, blob, "CodeBlob::_frame_complete_offset", frameComplete);
            if (f == Flavour.JDK25) {
                w.set(code, blob, "CodeBlob::_kind", kind);
                w.set(code, blob, "CodeBlob::_code_offset", codeOffset);
                w.set(code, blob, "CodeBlob::_data_offset", dataOffset);
            } else {
                code.put(blob, 8, symbol("_ZTV" + cls.length() + cls) + 16); // the vtable pointer
                w.set(code, blob, "CodeBlob::_code_begin", blob + codeOffset);
                w.set(code, blob, "CodeBlob::_code_end", blob + dataOffset);
                w.set(code, blob, "CodeBlob::_data_offset", dataOffset);
            }
            for (long pc = blob + codeOffset; pc < blob + dataOffset; pc++) {
                code.put(pc, 1, 0x90); // nops
            }
            return blob;
        }

        long buffer(int segments, String name, int frameWords, int frameComplete, int codeBytes) {
            int header = w.size("BufferBlob");
            return blob(segments, "BufferBlob", 2, name, frameWords, frameComplete, header, header + codeBytes);
        }

        void stub(int segments, String name, int frameWords, int frameComplete) {
            int header = w.size("RuntimeStub");
            blob(segments, "RuntimeStub", 6, name, frameWords, frameComplete, header, segments * seg - heapBlock - 16);
        }

        void adapter(int segments, String name) {
            int header = w.size("AdapterBlob");
            blob(segments, "AdapterBlob", 3, name, -1, -1, header, segments * seg - heapBlock - 8);
        }

        /**
         * An nmethod of {@code method} with {@code chain.size() - 1} methods inlined (chain: outermost first), its
         * code 256 bytes. PcDescs: the sentinel at -1; 16, the outermost alone; 40, the whole chain (innermost
         * first); 80, the second of the chain in the first (when there is one).
         */
        void nmethod(int segments, long method, List<Long> chain, int frameWords, int frameComplete, int compileId) {
            int header = w.size("nmethod");
            int codeBytes = 256;
            long blob = blob(segments, "nmethod", 1, "nmethod", frameWords, frameComplete, header, header + codeBytes);
            w.set(code, blob, f == Flavour.JDK25 ? "nmethod::_method" : "CompiledMethod::_method", method);
            w.set(code, blob, "nmethod::_compile_id", compileId);
            // Scope records: the null byte, then per method of the chain (sender, metadata index, bci), as
            // CompressedStream ints of one byte: JDK 21+ excludes byte 0 (each byte is value + 1), JDK 17 does not.
            int x = f == Flavour.JDK25 ? 1 : 0;
            List<Integer> offsets = new ArrayList<>();
            java.io.ByteArrayOutputStream scopes = new java.io.ByteArrayOutputStream();
            scopes.write(x);
            int sender = 0;
            for (int i = 0; i < chain.size(); i++) {
                offsets.add(scopes.size());
                scopes.write(sender + x);
                scopes.write(i + 1 + x);
                scopes.write(5 - i + x);
                sender = offsets.getLast();
            }
            while (scopes.size() % 8 != 0) {
                scopes.write(0);
            }
            List<int[]> descs = new ArrayList<>(List.of(new int[] {-1, 0}, new int[] {16, offsets.getFirst()},
                    new int[] {40, offsets.getLast()}));
            if (chain.size() > 1) {
                descs.add(new int[] {80, offsets.get(1)});
            }
            byte[] pcs = new byte[16 * descs.size()];
            ByteBuffer pb = ByteBuffer.wrap(pcs).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < descs.size(); i++) {
                pb.putInt(16 * i + (int) w.offset("PcDesc::_pc_offset"), descs.get(i)[0]);
                pb.putInt(16 * i + (int) w.offset("PcDesc::_scope_decode_offset"), descs.get(i)[1]);
            }
            byte[] meta = new byte[8 * chain.size()];
            ByteBuffer mb = ByteBuffer.wrap(meta).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < chain.size(); i++) {
                mb.putLong(8 * i, chain.get(i));
            }
            byte[] sd = scopes.toByteArray();
            if (f == Flavour.JDK25) {
                // PcDescs then scopes in the C-heap immutable data; the metadata after 16 bytes of relocations in the
                // mutable data.
                long imm = heap.alloc(pcs.length + sd.length, 8);
                heap.putBytes(imm, pcs);
                heap.putBytes(imm + pcs.length, sd);
                w.set(code, blob, "nmethod::_immutable_data", imm);
                w.set(code, blob, "nmethod::_scopes_pcs_offset", 0);
                w.set(code, blob, "nmethod::_scopes_data_offset", pcs.length);
                w.set(code, blob, "nmethod::_immutable_data_size", pcs.length + sd.length);
                long mutable = heap.alloc(16 + meta.length, 8);
                heap.putBytes(mutable + 16, meta);
                w.set(code, blob, "CodeBlob::_mutable_data", mutable);
                w.set(code, blob, "CodeBlob::_relocation_size", 16);
                w.set(code, blob, "CodeBlob::_mutable_data_size", 16 + meta.length);
            } else {
                // Inside the nmethod after its code: metadata, scopes data, PcDescs, then the dependencies.
                long metaAt = header + codeBytes;
                long scopesAt = metaAt + meta.length;
                long pcsAt = scopesAt + sd.length;
                code.putBytes(blob + metaAt, meta);
                code.putBytes(blob + scopesAt, sd);
                code.putBytes(blob + pcsAt, pcs);
                w.set(code, blob, "nmethod::_metadata_offset", metaAt);
                w.set(code, blob, "CompiledMethod::_scopes_data_begin", blob + scopesAt);
                w.set(code, blob, "nmethod::_scopes_pcs_offset", pcsAt);
                w.set(code, blob, "nmethod::_dependencies_offset", pcsAt + pcs.length);
                if (pcsAt + pcs.length > (long) segments * seg - heapBlock) {
                    throw new IllegalStateException("nmethod's sections overflow its block");
                }
            }
        }
    }

    // ---------------- the input encoding ----------------

    /** The fuzz input of {@code spaces} (in order), the process exiting after {@code goneAfter} reads (0: never). */
    static byte[] encode(int goneAfter, List<Space> spaces) {
        List<FakeProcessMemory.Region> rs = new ArrayList<>();
        for (Space s : spaces) {
            rs.add(new FakeProcessMemory.Region(s.base, s.bytes()));
        }
        return encodeRegions(goneAfter, rs);
    }

    static byte[] encodeRegions(int goneAfter, List<FakeProcessMemory.Region> rs) {
        int n = 3 + 12 * rs.size();
        for (FakeProcessMemory.Region r : rs) {
            n += r.bytes().length;
        }
        ByteBuffer b = ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) rs.size());
        b.putShort((short) goneAfter);
        for (FakeProcessMemory.Region r : rs) {
            b.putLong(r.base());
            b.putInt(r.bytes().length);
        }
        for (FakeProcessMemory.Region r : rs) {
            b.put(r.bytes());
        }
        return b.array();
    }

    /** The address space an input describes (see the class comment); never fails. */
    static FakeProcessMemory decode(byte[] input) {
        ByteBuffer b = ByteBuffer.wrap(input).order(ByteOrder.LITTLE_ENDIAN);
        if (b.remaining() < 3) {
            return new FakeProcessMemory(List.of(), 0);
        }
        int n = (b.get() & 0xFF) % (MAX_REGIONS + 1);
        int goneAfter = b.getShort() & 0xFFFF;
        long[] bases = new long[n];
        int[] lengths = new int[n];
        int declared = 0;
        for (int i = 0; i < n && b.remaining() >= 12; i++, declared++) {
            bases[i] = b.getLong();
            lengths[i] = b.getInt();
        }
        List<FakeProcessMemory.Region> rs = new ArrayList<>();
        for (int i = 0; i < declared; i++) {
            int len = (int) Math.min(Integer.toUnsignedLong(lengths[i]), b.remaining());
            byte[] bytes = new byte[len];
            b.get(bytes);
            rs.add(new FakeProcessMemory.Region(bases[i], bytes));
        }
        return new FakeProcessMemory(rs, goneAfter);
    }

    /** The regions of an input, to be changed and encoded again (tests: inputs that are seeds with one lie). */
    static List<FakeProcessMemory.Region> regions(byte[] input) {
        return decode(input).regions();
    }

    private SyntheticJvm() {}
}
