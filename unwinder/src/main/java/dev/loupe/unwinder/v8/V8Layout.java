package dev.loupe.unwinder.v8;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * The part of a V8 build's layout this package uses, from its postmortem metadata ({@link V8Metadata}): frame slots,
 * tagging, the offsets and instance types of the objects a frame is named from (JSFunction, SharedFunctionInfo,
 * ScopeInfo, Script, the string kinds). Every field but those lines are read with is required: a build that lacks one
 * (a V8 whose names changed) is {@link Unsupported}, its JavaScript frames stay native, said once; one that lacks a
 * line field ({@link #hasLines}) names its frames without lines. Offsets are from an object's untagged start.
 */
public final class V8Layout {

    /** The runtime cannot be read: its frames stay native (the reason is logged once per binary). */
    public static final class Unsupported extends Exception {
        public Unsupported(String what) {
            super(what, null, false, false);
        }
    }

    /** A value of the layout, by the metadata names that may hold it (first found wins: names changed over V8 versions). */
    public enum Field {
        FP_MARKER("off_fp_context_or_frame_type", "off_fp_context"),
        FP_FUNCTION("off_fp_function"),
        FP_BYTECODE_ARRAY("off_fp_bytecode_array"),
        FP_BYTECODE_OFFSET("off_fp_bytecode_offset"),
        HEAP_OBJECT_TAG("HeapObjectTag"),
        HEAP_OBJECT_TAG_MASK("HeapObjectTagMask"),
        SMI_TAG("SmiTag"),
        SMI_TAG_MASK("SmiTagMask"),
        SMI_VALUE_SHIFT("SmiValueShift"),
        SMI_SHIFT_SIZE("SmiShiftSize"),
        OBJECT_MAP("class_HeapObject__map__Map", "class_HeapObject__map__Tagged_Map_"),
        MAP_INSTANCE_TYPE("class_Map__instance_type__uint16_t"),
        JS_FUNCTION_SHARED("class_JSFunction__shared__SharedFunctionInfo",
                "class_JSFunction__shared__Tagged_SharedFunctionInfo_"),
        SFI_NAME_OR_SCOPE_INFO("class_SharedFunctionInfo__name_or_scope_info__Object",
                "class_SharedFunctionInfo__name_or_scope_info__Tagged_Object_",
                "class_SharedFunctionInfo__name_or_scope_info__Tagged_NameOrScopeInfoT_"),
        SFI_SCRIPT_OR_DEBUG_INFO("class_SharedFunctionInfo__script_or_debug_info__HeapObject",
                "class_SharedFunctionInfo__script_or_debug_info__Tagged_HeapObject_",
                "class_SharedFunctionInfo__script__Tagged_HeapObject_"),
        SCRIPT_NAME("class_Script__name__Object", "class_Script__name__Tagged_Object_"),
        SCRIPT_LINE_ENDS("class_Script__line_ends__Object", "class_Script__line_ends__Tagged_Object_"),
        SCOPE_INFO_FIRST_VARS("scopeinfo_idx_first_vars"),
        SCOPE_INFO_CONTEXT_LOCALS("scopeinfo_idx_ncontextlocals"),
        STRING_LENGTH("class_String__length__int32_t"),
        SEQ_ONE_BYTE_CHARS("class_SeqOneByteString__chars__char"),
        SEQ_TWO_BYTE_CHARS("class_SeqTwoByteString__chars__char"),
        CONS_FIRST("class_ConsString__first__String", "class_ConsString__first__Tagged_String_"),
        CONS_SECOND("class_ConsString__second__String", "class_ConsString__second__Tagged_String_"),
        THIN_ACTUAL("class_ThinString__actual__String", "class_ThinString__actual__Tagged_String_"),
        SLICED_PARENT("class_SlicedString__parent__String", "class_SlicedString__parent__Tagged_String_"),
        SLICED_OFFSET("class_SlicedString__offset__SMI"),
        FIRST_NONSTRING_TYPE("FirstNonstringType"),
        STRING_ENCODING_MASK("StringEncodingMask"),
        ONE_BYTE_STRING_TAG("OneByteStringTag"),
        TWO_BYTE_STRING_TAG("TwoByteStringTag"),
        STRING_REPRESENTATION_MASK("StringRepresentationMask"),
        SEQ_STRING_TAG("SeqStringTag"),
        CONS_STRING_TAG("ConsStringTag"),
        SLICED_STRING_TAG("SlicedStringTag"),
        THIN_STRING_TAG("ThinStringTag"),
        EXTERNAL_STRING_TAG("ExternalStringTag"),
        JS_FUNCTION_TYPE("type_JSFunction__JS_FUNCTION_TYPE"),
        SFI_TYPE("type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE"),
        SCRIPT_TYPE("type_Script__SCRIPT_TYPE"),
        SCOPE_INFO_TYPE("type_ScopeInfo__SCOPE_INFO_TYPE"),
        FIXED_ARRAY_TYPE("type_FixedArray__FIXED_ARRAY_TYPE"),
        FIXED_ARRAY_LENGTH("class_FixedArrayBase__length__SMI"),
        FIXED_ARRAY_DATA("class_FixedArray__data__uintptr_t"),
        // Lines (optional: a build without them names its frames without lines)
        SCRIPT_SOURCE(true, "class_Script__source__Object", "class_Script__source__Tagged_Object_"),
        SFI_FUNCTION_DATA(true, "class_SharedFunctionInfo__function_data__Object",
                "class_SharedFunctionInfo__function_data__Tagged_Object_"),
        BYTECODE_ARRAY_TYPE(true, "type_BytecodeArray__BYTECODE_ARRAY_TYPE"),
        BYTECODE_DATA(true, "class_BytecodeArray__data__uintptr_t"),
        BYTECODE_SOURCE_POSITIONS(true),
        BYTE_ARRAY_TYPE(true, "type_ByteArray__BYTE_ARRAY_TYPE"),
        TRUSTED_BYTE_ARRAY_TYPE(true, "type_TrustedByteArray__TRUSTED_BYTE_ARRAY_TYPE"),
        CODE_TYPE(true, "type_Code__CODE_TYPE"),
        CODE_BYTECODE(true, "class_Code__bytecode_or_interpreter_data__HeapObject",
                "class_Code__bytecode_or_interpreter_data__Tagged_HeapObject_");

        private final List<String> names;
        private final boolean optional;

        Field(String... names) {
            this(false, names);
        }

        Field(boolean optional, String... names) {
            this.optional = optional;
            this.names = List.of(names);
        }

        public List<String> names() {
            return names;
        }
    }

    private final Map<Field, Long> values;

    private V8Layout(Map<Field, Long> values) {
        this.values = values;
    }

    /**
     * The layout {@code metadata} describes.
     *
     * @throws Unsupported a field none of whose names it exports, or values this package cannot work with (a build
     *                     with pointer compression or other tagging than 64-bit V8's)
     */
    public static V8Layout of(V8Metadata metadata) throws Unsupported {
        Map<Field, Long> values = new EnumMap<>(Field.class);
        List<String> missing = new ArrayList<>();
        for (Field f : Field.values()) {
            Long v = null;
            for (String n : f.names) {
                v = metadata.get(n);
                if (v != null) {
                    break;
                }
            }
            if (v == null && f.optional) {
                v = derived(f, metadata);
            }
            if (v == null) {
                if (!f.optional) {
                    missing.add(f.names.getFirst());
                }
            } else {
                values.put(f, v);
            }
        }
        if (!missing.isEmpty()) {
            throw new Unsupported("V8 metadata lacks " + String.join(", ", missing));
        }
        V8Layout l = new V8Layout(values);
        if (l.get(Field.HEAP_OBJECT_TAG) != 1 || l.get(Field.HEAP_OBJECT_TAG_MASK) != 3 || l.get(Field.SMI_TAG) != 0
                || l.get(Field.SMI_TAG_MASK) != 1 || l.smiShift() != 32) {
            throw new Unsupported("V8 tagging (heap object tag " + l.get(Field.HEAP_OBJECT_TAG) + "/"
                    + l.get(Field.HEAP_OBJECT_TAG_MASK) + ", Smi tag " + l.get(Field.SMI_TAG) + "/" + l.get(Field.SMI_TAG_MASK)
                    + ", Smi shift " + l.smiShift() + ") is not 64-bit V8's without pointer compression");
        }
        for (Field f : List.of(Field.FP_MARKER, Field.FP_FUNCTION, Field.FP_BYTECODE_ARRAY, Field.FP_BYTECODE_OFFSET)) {
            long v = l.get(f);
            if (v >= 0 || v < -FRAME_SLOTS_BYTES || (v & 7) != 0) {
                throw new Unsupported("V8 frame slot " + f.names.getFirst() + " = " + v + " is not a slot below the frame pointer");
            }
        }
        return l;
    }

    /**
     * A line field the metadata does not export, from the layout V8's own sources give the build's generation (told
     * apart by a field only V8 12 exports, BytecodeArray's wrapper), or null. What it finds is checked by type where it
     * is read (a BytecodeArray, a ByteArray), so a wrong guess loses a line, never names a wrong one:
     * <ul>
     *   <li>BytecodeArray's source position table: V8 10-11 (node 18, 20): map, length, constant pool, handler table,
     *       source position table at 32; V8 12 (node 22): map, length, wrapper, source position table at 24;</li>
     *   <li>SharedFunctionInfo's function data (V8 12 exports none): the word after the map, 8, as in V8 10-11.</li>
     * </ul>
     */
    private static Long derived(Field f, V8Metadata metadata) {
        boolean v12 = metadata.get("class_BytecodeArray__wrapper__Tagged_BytecodeWrapper_") != null;
        return switch (f) {
            case BYTECODE_SOURCE_POSITIONS -> v12 ? 24L : 32L;
            case SFI_FUNCTION_DATA -> v12 ? 8L : null;
            default -> null;
        };
    }

    /** Whether an optional field is known. */
    public boolean has(Field f) {
        return values.containsKey(f);
    }

    /** Whether this layout gives what lines are read with (each optional field but the baseline code's bytecode). */
    public boolean hasLines() {
        return has(Field.SCRIPT_SOURCE) && has(Field.SFI_FUNCTION_DATA) && has(Field.BYTECODE_ARRAY_TYPE)
                && has(Field.BYTECODE_DATA) && has(Field.BYTECODE_SOURCE_POSITIONS) && has(Field.BYTE_ARRAY_TYPE);
    }

    /** How far below the frame pointer the slots this reads lie at most (the kernel reads them at once). */
    public static final int FRAME_SLOTS_BYTES = 64;

    public long get(Field f) {
        return values.get(f);
    }

    /** A field's value as an int (offsets, types, tags: all small). */
    public int i(Field f) {
        return (int) get(f);
    }

    /** Whether a word is a heap object pointer (tagged). */
    public boolean isHeapObject(long word) {
        return (word & get(Field.HEAP_OBJECT_TAG_MASK)) == get(Field.HEAP_OBJECT_TAG);
    }

    /** Whether a word is a Smi. */
    public boolean isSmi(long word) {
        return (word & get(Field.SMI_TAG_MASK)) == get(Field.SMI_TAG);
    }

    /** How far a Smi's value is shifted in its word: the tag's width and the padding above it (1 + 31 on 64-bit). */
    public int smiShift() {
        return (int) (get(Field.SMI_VALUE_SHIFT) + get(Field.SMI_SHIFT_SIZE));
    }

    /** A Smi word's value. */
    public long smi(long word) {
        return word >> smiShift();
    }

    @Override
    public String toString() {
        return "V8 layout: function at fp" + get(Field.FP_FUNCTION) + ", marker at fp" + get(Field.FP_MARKER)
                + ", bytecode offset at fp" + get(Field.FP_BYTECODE_OFFSET);
    }
}
