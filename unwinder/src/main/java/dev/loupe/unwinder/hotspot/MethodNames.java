package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.proc.ProcessMemory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Optional;

/**
 * Names a {@code Method*} the way the serviceability agent does: Method::_constMethod, ConstMethod::_constants
 * and _name_index, the constant pool's entry at that index (a Symbol*, in the pointer-sized slots that follow the
 * ConstantPool header), and ConstantPool::_pool_holder's Klass::_name. Every step is checked (alignment,
 * index within the pool, the pool's tag saying Utf8, symbol lengths, modified UTF-8 that makes a legal
 * name), so that a pointer that is not a Method gives empty rather than garbage.
 */
final class MethodNames {
    private static final int MAX_POOL = 65536;

    private final ProcessMemory mem;
    private final Layout l;

    MethodNames(ProcessMemory mem, Layout layout) {
        this.mem = mem;
        this.l = layout;
    }

    /** Empty if the pointers do not hold together; IOException only from unreadable memory. */
    Optional<String> name(long method) throws IOException {
        if (!aligned(method)) {
            return Optional.empty();
        }
        long constMethod = l.methodConstMethod.get(mem.read(method, (int) l.methodConstMethod.end()), 0);
        if (!aligned(constMethod)) {
            return Optional.empty();
        }
        ByteBuffer cm = mem.read(constMethod, (int) Math.max(l.constMethodConstants.end(), l.constMethodNameIndex.end()));
        long cp = l.constMethodConstants.get(cm, 0);
        long nameIndex = l.constMethodNameIndex.get(cm, 0);
        if (!aligned(cp) || nameIndex <= 0) {
            return Optional.empty();
        }
        ByteBuffer pool = mem.read(cp, (int) l.cpSize);
        long holder = l.cpPoolHolder.get(pool, 0);
        String methodName = poolUtf8(cp, pool, nameIndex);
        if (methodName == null || !legalMethodName(methodName) || !aligned(holder)) {
            return Optional.empty();
        }
        long klassName = l.klassName.get(mem.read(holder, (int) l.klassName.end()), 0);
        String className = symbol(klassName);
        if (className == null || !legalClassName(className)) {
            return Optional.empty();
        }
        return Optional.of(externalClassName(className) + "." + methodName);
    }

    /**
     * '/' to '.', as Class.getName(); a hidden class's name ("Foo$$Lambda+0x0000000800c01234" in its Symbol) shows
     * its suffix after a '/' as Class.getName() and HotSpot's external names do.
     */
    static String externalClassName(String internal) {
        String s = internal.replace('/', '.');
        int plus = s.lastIndexOf("+0x");
        if (plus > 0 && s.indexOf('.', plus) < 0) {
            s = s.substring(0, plus) + "/" + s.substring(plus + 1);
        }
        return s;
    }

    /**
     * The Utf8 entry {@code index} of the constant pool at {@code cp} (its header {@code pool}), or null where the pool's
     * length, tags or symbol do not hold together. IOException only from unreadable memory.
     */
    String poolUtf8(long cp, ByteBuffer pool, long index) throws IOException {
        long length = l.cpLength.get(pool, 0);
        long tags = l.cpTags.get(pool, 0);
        if (index <= 0 || length <= 0 || length > MAX_POOL || index >= length || !aligned(tags)) {
            return null;
        }
        ByteBuffer tagArray = mem.read(tags, (int) l.arrayU1Length.end());
        if (l.arrayU1Length.get(tagArray, 0) != length) {
            return null;
        }
        long tag = mem.read(tags + l.arrayU1Data + index, 1).get(0) & 0xFF;
        if (tag != l.utf8Tag) {
            return null;
        }
        return symbol(mem.readLong(cp + l.cpSize + index * 8));
    }

    private String symbol(long symbol) throws IOException {
        if (!aligned(symbol)) {
            return null;
        }
        long len = l.symbolLength.get(mem.read(symbol, (int) l.symbolLength.end()), 0);
        if (len <= 0 || len > 65535) {
            return null;
        }
        ByteBuffer body = mem.read(symbol + l.symbolBody, (int) len);
        return modifiedUtf8(body);
    }

    static boolean aligned(long p) {
        return p > 4096 && (p & 7) == 0 && p < (1L << 57);
    }

    /** Decodes the JVM's modified UTF-8 (no NUL bytes, no 4-byte forms); null if malformed or holding controls. */
    static String modifiedUtf8(ByteBuffer b) {
        StringBuilder sb = new StringBuilder(b.remaining());
        int i = b.position();
        int end = b.limit();
        while (i < end) {
            int c = b.get(i) & 0xFF;
            int ch;
            if (c >= 0x01 && c < 0x80) {
                ch = c;
                i += 1;
            } else if ((c & 0xE0) == 0xC0 && i + 1 < end && (b.get(i + 1) & 0xC0) == 0x80) {
                ch = ((c & 0x1F) << 6) | (b.get(i + 1) & 0x3F);
                i += 2;
            } else if ((c & 0xF0) == 0xE0 && i + 2 < end && (b.get(i + 1) & 0xC0) == 0x80 && (b.get(i + 2) & 0xC0) == 0x80) {
                ch = ((c & 0x0F) << 12) | ((b.get(i + 1) & 0x3F) << 6) | (b.get(i + 2) & 0x3F);
                i += 3;
            } else {
                return null;
            }
            if (ch < 0x20 || ch == 0x7F) {
                return null;
            }
            sb.append((char) ch);
        }
        return sb.toString();
    }

    /** JVMS 4.2.2: no . ; [ / and no < > except in the special initializer names. */
    static boolean legalMethodName(String s) {
        if (s.equals("<init>") || s.equals("<clinit>")) {
            return true;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '.' || c == ';' || c == '[' || c == '/' || c == '<' || c == '>') {
                return false;
            }
        }
        return !s.isEmpty();
    }

    /** JVMS 4.2.1 binary name in internal form: '/'-separated non-empty identifiers without . ; [. */
    static boolean legalClassName(String s) {
        if (s.isEmpty() || s.startsWith("/") || s.endsWith("/") || s.contains("//")) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '.' || c == ';' || c == '[') {
                return false;
            }
        }
        return true;
    }
}
