package dev.loupe.unwinder.hotspot;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;

/**
 * The offsets, widths and sizes this package reads, resolved once from {@link VmStructs}: whichever of a field's
 * historical names and types the running JVM's table has (e.g. CodeBlob's absolute {@code _code_begin} up to
 * JDK 22, the header-relative {@code _code_offset} after), never by version number.
 */
final class Layout {
    /** A non-static field: where, and how many bytes of which signedness (from its type string). */
    record Scalar(String name, long offset, int width, boolean signed) {
        long get(ByteBuffer b, int base) {
            int at = base + (int) offset;
            return switch (width) {
                case 1 -> signed ? b.get(at) : Byte.toUnsignedLong(b.get(at));
                case 2 -> signed ? b.getShort(at) : Short.toUnsignedLong(b.getShort(at));
                case 4 -> signed ? b.getInt(at) : Integer.toUnsignedLong(b.getInt(at));
                default -> b.getLong(at);
            };
        }

        long end() {
            return offset + width;
        }
    }

    // Code cache
    final long heapsAddress;               // &CodeCache::_heaps (JDK 9+), or &CodeCache::_heap (JDK 8: one heap)
    final boolean singleHeap;              // heapsAddress holds the one CodeHeap*, not a GrowableArray of them
    final Scalar arrayLen;                 // GrowableArrayBase::_len (null with a single heap)
    final Scalar arrayData;                // GrowableArray<...>::_data (null with a single heap)
    final long heapMemory;                 // CodeHeap::_memory (a VirtualSpace)
    final long heapSegmap;                 // CodeHeap::_segmap
    final Scalar heapLog2SegmentSize;
    final long heapSize;                   // sizeof(CodeHeap)
    final Scalar vsLow;                    // VirtualSpace::_low
    final Scalar vsHigh;
    final Scalar blockLength;              // HeapBlock::Header::_length (segments)
    final Scalar blockUsed;
    final long blockHeader;                // HeapBlock::_header
    final long heapBlockSize;              // sizeof(HeapBlock): the CodeBlob follows
    // CodeBlob
    final Scalar blobName;
    final Scalar blobSize;
    final Scalar codeBegin;                // absolute (JDK <= 22) ...
    final Scalar codeEnd;
    final Scalar codeOffset;               // ... or header-relative (JDK 23+); one pair is null
    final Scalar dataOffset;
    final Scalar frameCompleteOffset;
    final Scalar frameSize;
    final Scalar kind;                     // CodeBlob::_kind (JDK 23+) or null
    final Map<Long, String> kindClasses = new HashMap<>(); // CodeBlobKind value -> class name
    final Scalar nmethodMethod;            // nmethod::_method or CompiledMethod::_method
    final long blobReadBytes;              // bytes of a blob header to read to see every field above
    // Metadata
    final Scalar methodConstMethod;
    final Scalar constMethodCodeSize;      // ConstMethod::_code_size: the bytecodes follow the ConstMethod; null if absent
    final long constMethodSize;            // sizeof(ConstMethod): where the bytecodes start
    final Scalar constMethodConstants;
    final Scalar constMethodNameIndex;
    final Scalar cpTags;
    final Scalar cpPoolHolder;
    final Scalar cpLength;
    final long cpSize;                     // sizeof(ConstantPool): the entries follow
    final Scalar arrayU1Length;
    final long arrayU1Data;
    final Scalar klassName;
    final Scalar symbolLength;
    final long symbolBody;
    final long utf8Tag;
    final long vmRelease;                  // &Abstract_VM_Version::_s_vm_release, or 0
    final long callStubReturn;             // &StubRoutines::_call_stub_return_address, or 0
    // The interpreter's codelets (AbstractInterpreter::_code, a StubQueue of InterpreterCodelets): null when the table
    // lacks a field of them (a build that drops them, a fake JVM); only their names need them
    final Codelets codelets;
    // Debug information, for inlined frames: null (with the reason) when the table lacks a field of it
    final Scopes scopes;
    final String scopesUnavailable;

    /**
     * Where an nmethod's PcDescs, scopes and metadata are (see {@link NmethodScopes}): in the C-heap immutable and
     * mutable data (JDK 25: {@code immutableData} set) or inside the nmethod (JDK 9 to 22: {@code scopesDataBegin}
     * set; JDK 8: {@code scopesDataOffset} set, header-relative); the fields of the other kinds are null.
     */
    record Scopes(long pcDescSize, Scalar pcOffset, Scalar scopeDecodeOffset, Scalar scopesPcsOffset,
                  Scalar immutableData, Scalar immutableDataSize, Scalar scopesDataOffset, Scalar mutableData,
                  Scalar relocationSize, Scalar mutableDataSize,
                  Scalar scopesDataBegin, Scalar dependenciesOffset, Scalar metadataOffset, Scalar compileId,
                  long headerBytes) {}

    /**
     * {@code &AbstractInterpreter::_code} (a {@code StubQueue*}), the queue's buffer and its begin and end offsets, and a
     * codelet's size in bytes (its header included) and description.
     */
    record Codelets(long codeAddress, Scalar stubBuffer, Scalar queueBegin, Scalar queueEnd, long queueSize,
                    Scalar size, Scalar description, long codeletSize) {}

    Layout(VmStructs vs) throws HotSpotException {
        singleHeap = vs.field("CodeCache", "_heaps").isEmpty() && vs.field("CodeCache", "_heap").isPresent();
        if (singleHeap) {
            heapsAddress = vs.staticAddress("CodeCache", "_heap");
            arrayLen = null;
            arrayData = null;
        } else {
            heapsAddress = vs.staticAddress("CodeCache", "_heaps");
            // GrowableArrayBase since JDK 16, GenericGrowableArray before
            arrayLen = scalar(vs, vs.field("GrowableArrayBase", "_len").isPresent() ? "GrowableArrayBase" : "GenericGrowableArray", "_len");
            arrayData = vs.field("GrowableArray<CodeHeap*>", "_data").isPresent()
                    ? pointer(vs, "GrowableArray<CodeHeap*>", "_data") : pointer(vs, "GrowableArray<int>", "_data");
        }
        heapMemory = vs.offset("CodeHeap", "_memory");
        heapSegmap = vs.offset("CodeHeap", "_segmap");
        heapLog2SegmentSize = scalar(vs, "CodeHeap", "_log2_segment_size");
        heapSize = vs.sizeOf("CodeHeap");
        vsLow = pointer(vs, "VirtualSpace", "_low");
        vsHigh = pointer(vs, "VirtualSpace", "_high");
        blockHeader = vs.offset("HeapBlock", "_header");
        blockLength = scalar(vs, "HeapBlock::Header", "_length");
        blockUsed = scalar(vs, "HeapBlock::Header", "_used");
        heapBlockSize = vs.sizeOf("HeapBlock");
        if (Math.max(heapMemory, heapSegmap) + vs.sizeOf("VirtualSpace") > heapSize
                || heapLog2SegmentSize.end() > heapSize) {
            throw new HotSpotException("CodeHeap fields lie beyond sizeof(CodeHeap) " + heapSize);
        }
        if (Math.max(vsLow.end(), vsHigh.end()) > vs.sizeOf("VirtualSpace")) {
            throw new HotSpotException("VirtualSpace fields lie beyond sizeof(VirtualSpace) " + vs.sizeOf("VirtualSpace"));
        }
        if (blockHeader + Math.max(blockLength.end(), blockUsed.end()) > heapBlockSize) {
            throw new HotSpotException("HeapBlock::Header fields lie beyond sizeof(HeapBlock) " + heapBlockSize);
        }

        blobName = pointer(vs, "CodeBlob", "_name");
        blobSize = scalar(vs, "CodeBlob", "_size");
        if (vs.field("CodeBlob", "_code_begin").isPresent()) {
            codeBegin = pointer(vs, "CodeBlob", "_code_begin");
            codeEnd = pointer(vs, "CodeBlob", "_code_end");
            codeOffset = null;
            dataOffset = null;
        } else if (vs.field("CodeBlob", "_code_offset").isPresent()) {
            codeBegin = null;
            codeEnd = null;
            codeOffset = scalar(vs, "CodeBlob", "_code_offset");
            dataOffset = scalar(vs, "CodeBlob", "_data_offset");
        } else {
            throw new HotSpotException("gHotSpotVMStructs has neither CodeBlob::_code_begin nor CodeBlob::_code_offset");
        }
        frameCompleteOffset = scalar(vs, "CodeBlob", "_frame_complete_offset");
        frameSize = scalar(vs, "CodeBlob", "_frame_size");
        if (vs.field("CodeBlob", "_kind").isPresent()) {
            kind = scalar(vs, "CodeBlob", "_kind");
            String[][] names = {
                    {"Nmethod", "nmethod"}, {"Buffer", "BufferBlob"}, {"Adapter", "AdapterBlob"},
                    {"MHAdapter", "MethodHandlesAdapterBlob"}, {"RuntimeStub", "RuntimeStub"}};
            for (String[] n : names) {
                Long v = vs.intConstants().get("CodeBlobKind::" + n[0]);
                if (v == null) {
                    throw new HotSpotException("gHotSpotVMIntConstants has no CodeBlobKind::" + n[0]);
                }
                kindClasses.put(v, n[1]);
            }
        } else {
            kind = null;
        }
        nmethodMethod = vs.field("nmethod", "_method").isPresent()
                ? pointer(vs, "nmethod", "_method") : pointer(vs, "CompiledMethod", "_method");
        blobReadBytes = nmethodBytes(vs, "CodeBlob", blobName, blobSize, codeBegin, codeEnd, codeOffset, dataOffset,
                frameCompleteOffset, frameSize, kind, nmethodMethod);

        methodConstMethod = pointer(vs, "Method", "_constMethod");
        constMethodConstants = pointer(vs, "ConstMethod", "_constants");
        // Only interpreted frames' lines need it: a table without it (a build that drops it, a fake) keeps every name.
        constMethodCodeSize = vs.field("ConstMethod", "_code_size").isPresent() ? scalar(vs, "ConstMethod", "_code_size") : null;
        constMethodSize = vs.sizeOf("ConstMethod");
        constMethodNameIndex = scalar(vs, "ConstMethod", "_name_index");
        cpTags = pointer(vs, "ConstantPool", "_tags");
        cpPoolHolder = pointer(vs, "ConstantPool", "_pool_holder");
        cpLength = scalar(vs, "ConstantPool", "_length");
        cpSize = vs.sizeOf("ConstantPool");
        if (Math.max(cpTags.end(), Math.max(cpPoolHolder.end(), cpLength.end())) > cpSize) {
            throw new HotSpotException("ConstantPool fields lie beyond sizeof(ConstantPool) " + cpSize);
        }
        arrayU1Length = vs.field("Array<u1>", "_length").isPresent() ? scalar(vs, "Array<u1>", "_length")
                : new Scalar("Array<u1>::_length", 0, 4, true); // as Array<int>::_length: the int all Arrays start with
        arrayU1Data = vs.offset("Array<u1>", "_data");
        klassName = pointer(vs, "Klass", "_name");
        symbolLength = scalar(vs, "Symbol", "_length");
        symbolBody = vs.offset("Symbol", "_body");
        Long utf8 = vs.intConstants().get("JVM_CONSTANT_Utf8");
        utf8Tag = utf8 == null ? 1 : utf8; // JVMS 4.4: CONSTANT_Utf8 is 1
        vmRelease = vs.field("Abstract_VM_Version", "_s_vm_release").map(VmStructs.Field::address).orElse(0L);
        callStubReturn = vs.field("StubRoutines", "_call_stub_return_address").filter(VmStructs.Field::isStatic)
                .map(VmStructs.Field::address).orElse(0L);
        Codelets cl = null;
        try {
            cl = codelets(vs);
        } catch (HotSpotException e) {
            // no codelet names: the interpreter's blob keeps its own
        }
        codelets = cl;
        Scopes sc = null;
        String why = null;
        try {
            sc = scopes(vs);
        } catch (HotSpotException e) {
            why = e.getMessage();
        }
        scopes = sc;
        scopesUnavailable = why;
    }

    private static Codelets codelets(VmStructs vs) throws HotSpotException {
        VmStructs.Field code = vs.field("AbstractInterpreter", "_code").filter(VmStructs.Field::isStatic)
                .orElseThrow(() -> new HotSpotException("no AbstractInterpreter::_code"));
        Codelets c = new Codelets(code.address(), pointer(vs, "StubQueue", "_stub_buffer"), scalar(vs, "StubQueue", "_queue_begin"),
                scalar(vs, "StubQueue", "_queue_end"), vs.sizeOf("StubQueue"), scalar(vs, "InterpreterCodelet", "_size"),
                pointer(vs, "InterpreterCodelet", "_description"), vs.sizeOf("InterpreterCodelet"));
        if (Math.max(c.stubBuffer.end(), Math.max(c.queueBegin.end(), c.queueEnd.end())) > c.queueSize
                || Math.max(c.size.end(), c.description.end()) > c.codeletSize) {
            throw new HotSpotException("StubQueue or InterpreterCodelet fields lie beyond their types' sizes");
        }
        return c;
    }

    private static Scopes scopes(VmStructs vs) throws HotSpotException {
        long pcDescSize = vs.sizeOf("PcDesc");
        Scalar pcOffset = scalar(vs, "PcDesc", "_pc_offset");
        Scalar decode = scalar(vs, "PcDesc", "_scope_decode_offset");
        if (Math.max(pcOffset.end(), decode.end()) > pcDescSize) {
            throw new HotSpotException("PcDesc fields lie beyond sizeof(PcDesc) " + pcDescSize);
        }
        Scalar pcs = scalar(vs, "nmethod", "_scopes_pcs_offset");
        Scalar immutableData = null;
        Scalar immutableDataSize = null;
        Scalar scopesDataOffset = null;
        Scalar mutableData = null;
        Scalar relocationSize = null;
        Scalar mutableDataSize = null;
        Scalar scopesDataBegin = null;
        Scalar dependenciesOffset = null;
        Scalar metadataOffset = null;
        if (vs.field("nmethod", "_immutable_data").isPresent()) {
            immutableData = pointer(vs, "nmethod", "_immutable_data");
            immutableDataSize = scalar(vs, "nmethod", "_immutable_data_size");
            scopesDataOffset = scalar(vs, "nmethod", "_scopes_data_offset");
            mutableData = pointer(vs, "CodeBlob", "_mutable_data");
            relocationSize = scalar(vs, "CodeBlob", "_relocation_size");
            mutableDataSize = scalar(vs, "CodeBlob", "_mutable_data_size");
        } else {
            if (vs.field("nmethod", "_scopes_data_offset").isPresent()) { // JDK 8: every section header-relative
                scopesDataOffset = scalar(vs, "nmethod", "_scopes_data_offset");
            } else {
                scopesDataBegin = pointer(vs, vs.field("nmethod", "_scopes_data_begin").isPresent() ? "nmethod" : "CompiledMethod",
                        "_scopes_data_begin");
            }
            dependenciesOffset = scalar(vs, "nmethod", "_dependencies_offset");
            metadataOffset = scalar(vs, "nmethod", "_metadata_offset");
        }
        Scalar compileId = scalar(vs, "nmethod", "_compile_id");
        long max = nmethodBytes(vs, "nmethod debug-information", pcs, immutableData, immutableDataSize, scopesDataOffset,
                mutableData, relocationSize, mutableDataSize, scopesDataBegin, dependenciesOffset, metadataOffset, compileId);
        return new Scopes(pcDescSize, pcOffset, decode, pcs, immutableData, immutableDataSize, scopesDataOffset, mutableData,
                relocationSize, mutableDataSize, scopesDataBegin, dependenciesOffset, metadataOffset, compileId, max);
    }

    /** The bytes of an nmethod's header to read to see every one of {@code fields} (null ones skipped), checked. */
    private static long nmethodBytes(VmStructs vs, String what, Scalar... fields) throws HotSpotException {
        long max = 0;
        for (Scalar f : fields) {
            if (f != null) {
                max = Math.max(max, f.end());
            }
        }
        if (max > vs.sizeOf("nmethod")) {
            throw new HotSpotException(what + " fields lie beyond sizeof(nmethod) " + vs.sizeOf("nmethod"));
        }
        return max;
    }

    static Scalar pointer(VmStructs vs, String type, String name) throws HotSpotException {
        return new Scalar(type + "::" + name, vs.offset(type, name), 8, false);
    }

    /** An integer field, its width and signedness from the table's type string. */
    static Scalar scalar(VmStructs vs, String type, String name) throws HotSpotException {
        long off = vs.offset(type, name);
        String t = vs.field(type, name).orElseThrow().typeString().replace("volatile ", "").replace("const ", "").trim();
        int width;
        boolean signed;
        switch (t) {
            case "bool", "u1", "uint8_t", "unsigned char", "CodeBlobKind" -> { width = 1; signed = false; }
            case "signed char", "jbyte", "int8_t", "char" -> { width = 1; signed = true; }
            case "u2", "uint16_t", "unsigned short", "jchar" -> { width = 2; signed = false; }
            case "int16_t", "short", "jshort" -> { width = 2; signed = true; }
            case "int", "jint", "int32_t" -> { width = 4; signed = true; }
            case "u4", "uint32_t", "juint", "unsigned int" -> { width = 4; signed = false; }
            case "size_t", "uintx", "uint64_t", "u8", "uintptr_t", "julong" -> { width = 8; signed = false; }
            case "intx", "int64_t", "jlong", "long", "intptr_t", "ssize_t" -> { width = 8; signed = true; }
            default -> throw new HotSpotException(type + "::" + name + " has type '" + t + "', not an integer type this reader knows");
        }
        return new Scalar(type + "::" + name, off, width, signed);
    }
}
