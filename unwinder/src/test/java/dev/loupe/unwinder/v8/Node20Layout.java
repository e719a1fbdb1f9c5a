package dev.loupe.unwinder.v8;

import java.util.Map;

/** The layout of Debian's node 20 (V8 11.3), as V8MetadataTest reads it from /usr/bin/node: for fakes and fuzzing. */
final class Node20Layout {
    private Node20Layout() {}

    static final Map<String, Long> VALUES = Map.ofEntries(
            Map.entry("off_fp_context_or_frame_type", -8L),
            Map.entry("off_fp_function", -16L),
            Map.entry("off_fp_bytecode_array", -32L),
            Map.entry("off_fp_bytecode_offset", -40L),
            Map.entry("HeapObjectTag", 1L),
            Map.entry("HeapObjectTagMask", 3L),
            Map.entry("SmiTag", 0L),
            Map.entry("SmiTagMask", 1L),
            Map.entry("SmiValueShift", 1L),
            Map.entry("SmiShiftSize", 31L),
            Map.entry("class_HeapObject__map__Map", 0L),
            Map.entry("class_Map__instance_type__uint16_t", 12L),
            Map.entry("class_JSFunction__shared__SharedFunctionInfo", 24L),
            Map.entry("class_SharedFunctionInfo__name_or_scope_info__Object", 16L),
            Map.entry("class_SharedFunctionInfo__script_or_debug_info__HeapObject", 32L),
            Map.entry("class_Script__name__Object", 16L),
            Map.entry("class_Script__line_ends__Object", 56L),
            Map.entry("scopeinfo_idx_first_vars", 3L),
            Map.entry("scopeinfo_idx_ncontextlocals", 2L),
            Map.entry("class_String__length__int32_t", 12L),
            Map.entry("class_SeqOneByteString__chars__char", 16L),
            Map.entry("class_SeqTwoByteString__chars__char", 16L),
            Map.entry("class_ConsString__first__String", 16L),
            Map.entry("class_ConsString__second__String", 24L),
            Map.entry("class_ThinString__actual__String", 16L),
            Map.entry("class_SlicedString__parent__String", 16L),
            Map.entry("class_SlicedString__offset__SMI", 24L),
            Map.entry("FirstNonstringType", 128L),
            Map.entry("StringEncodingMask", 8L),
            Map.entry("OneByteStringTag", 8L),
            Map.entry("TwoByteStringTag", 0L),
            Map.entry("StringRepresentationMask", 7L),
            Map.entry("SeqStringTag", 0L),
            Map.entry("ConsStringTag", 1L),
            Map.entry("SlicedStringTag", 3L),
            Map.entry("ThinStringTag", 5L),
            Map.entry("ExternalStringTag", 2L),
            Map.entry("type_JSFunction__JS_FUNCTION_TYPE", 2066L),
            Map.entry("type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", 262L),
            Map.entry("type_Script__SCRIPT_TYPE", 167L),
            Map.entry("type_ScopeInfo__SCOPE_INFO_TYPE", 261L),
            Map.entry("type_FixedArray__FIXED_ARRAY_TYPE", 175L),
            Map.entry("class_FixedArrayBase__length__SMI", 8L),
            Map.entry("class_FixedArray__data__uintptr_t", 16L),
            Map.entry("class_Script__source__Object", 8L),
            Map.entry("class_SharedFunctionInfo__function_data__Object", 8L),
            Map.entry("type_BytecodeArray__BYTECODE_ARRAY_TYPE", 191L),
            Map.entry("class_BytecodeArray__data__uintptr_t", 54L),
            Map.entry("type_ByteArray__BYTE_ARRAY_TYPE", 190L),
            Map.entry("type_Code__CODE_TYPE", 245L),
            Map.entry("class_Code__bytecode_or_interpreter_data__HeapObject", 16L));

    static V8Layout layout() {
        try {
            return V8Layout.of(new V8Metadata(VALUES, 0, 0, java.util.List.of()));
        } catch (V8Layout.Unsupported e) {
            throw new IllegalStateException(e);
        }
    }
}
