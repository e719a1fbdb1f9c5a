package dev.loupe.unwinder.hotspot;

/**
 * A code blob of the code cache.
 *
 * @param address              the blob itself (its header: HotSpot's {@code header_begin()}), where an nmethod's
 *                             debug information is found from
 * @param start                the first byte of the blob's instructions (HotSpot's {@code code_begin()})
 * @param end                  the end of its instructions, exclusive ({@code code_end()})
 * @param frameCompleteAddress {@code start + _frame_complete_offset}: from here on the blob's frame is set up;
 *                             -1 if HotSpot does not know (frame never safe)
 * @param frameSizeBytes       {@code _frame_size} (words) times 8: the frame's size including the return address
 *                             once complete, so the CFA is RSP + this; -1 where HotSpot records none
 *                             ({@code _frame_size} -1: some stub BufferBlobs)
 * @param name                 HotSpot's name for the blob ("nmethod", "Interpreter", a stub's name...); empty where
 *                             it has none or it is not a readable string of printable ASCII
 * @param method               an nmethod's {@code Method*}, else 0
 */
public record CodeBlob(Kind kind, long address, long start, long end, long frameCompleteAddress, int frameSizeBytes, String name, long method) {
    /**
     * What the blob is, from its {@code _kind} field (JDK 23+) or its C++ vtable (older JDKs): an nmethod (JIT-compiled
     * Java), the template interpreter (the BufferBlob named "Interpreter"), a RuntimeStub, an adapter
     * (AdapterBlob or MethodHandlesAdapterBlob), another BufferBlob, or anything else (deoptimization,
     * safepoint, exception, uncommon-trap, vtable and upcall blobs; or a blob whose class is unknown).
     */
    public enum Kind { NMETHOD, INTERPRETER, RUNTIME_STUB, ADAPTER, BUFFER_BLOB, OTHER }
}
