package dev.loupe.agent.regression;

import dev.loupe.pprof.Label;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * The bytes of one function's baselines file. Form (version {@value #VERSION}): the magic {@code LOUPEBL\n}, the
 * version (varint), the body, and a CRC-32C of everything before it (4 bytes, big-endian), so a torn or flipped
 * file is refused whole. Body: binary, function, current build id, its last call (ms), whether there is a
 * previous build and if so its id and slot, then the window's slots and the trailing slots, oldest first. A slot:
 * start, length, the histogram ({@link HistogramBytes}: buckets named by value, so the layout may change), and
 * its profile samples (stack, labels, calls, nanoseconds). Strings, frames and label lists are written once and
 * referred to by number after that (0 = a new one follows), which keeps a file of many slots of the same stacks
 * small. Numbers are varints; times zigzag varints.
 */
final class BaselineFile {
    static final int VERSION = 1;
    private static final byte[] MAGIC = "LOUPEBL\n".getBytes(StandardCharsets.US_ASCII);
    private static final int CRC_BYTES = 4;

    private BaselineFile() {
    }

    static byte[] encode(FunctionBaselines f) {
        Writer w = new Writer();
        w.out.raw(MAGIC).varint(VERSION);
        w.out.string(f.key.binary()).string(f.key.function()).string(f.currentBuild()).signed(f.currentLastCall());
        if (f.previousBuild() == null) {
            w.out.varint(0);
        } else {
            w.out.varint(1).string(f.previousBuild());
            w.slot(f.previous());
        }
        w.slots(f.history().windowSlots());
        w.slots(f.history().trailingSlots());
        byte[] body = w.out.toByteArray();
        CRC32C crc = new CRC32C();
        crc.update(body);
        return ByteBuffer.allocate(body.length + CRC_BYTES).put(body).putInt((int) crc.getValue()).array();
    }

    /** Reads a file's bytes; {@link IllegalArgumentException} says why they are not a baselines file. */
    static FunctionBaselines decode(byte[] bytes, Interner<Object> interner) {
        if (bytes.length < MAGIC.length + CRC_BYTES || !Arrays.equals(bytes, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
            throw new IllegalArgumentException("not a latency baselines file");
        }
        int bodyLength = bytes.length - CRC_BYTES;
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, bodyLength);
        if ((int) crc.getValue() != ByteBuffer.wrap(bytes, bodyLength, CRC_BYTES).getInt()) {
            throw new IllegalArgumentException("checksum mismatch (damaged or partly written)");
        }
        Reader r = new Reader(new BinaryIn(Arrays.copyOfRange(bytes, MAGIC.length, bodyLength)), interner);
        long version = r.in.varint();
        if (version != VERSION) {
            throw new IllegalArgumentException("format version " + version + ", this agent reads " + VERSION);
        }
        FunctionKey key = new FunctionKey(r.in.string(), r.in.string());
        String current = r.in.string();
        long lastCall = r.in.signed();
        String previousBuild = null;
        Slot previous = null;
        long hasPrevious = r.in.varint();
        if (hasPrevious == 1) {
            previousBuild = r.in.string();
            previous = r.slot();
        } else if (hasPrevious != 0) {
            throw new IllegalArgumentException("bad previous-build flag " + hasPrevious);
        }
        List<Slot> window = r.slots();
        List<Slot> trailing = r.slots();
        if (r.in.hasRemaining()) {
            throw new IllegalArgumentException(r.in.remaining() + " trailing bytes");
        }
        return new FunctionBaselines(key, current, lastCall, BuildHistory.of(window, trailing), previousBuild, previous);
    }

    private static final class Writer {
        final BinaryOut out = new BinaryOut();
        private final Map<Object, Integer> refs = new HashMap<>();

        void slots(List<Slot> slots) {
            out.varint(slots.size());
            for (Slot s : slots) {
                slot(s);
            }
        }

        void slot(Slot s) {
            out.signed(s.start).varint(s.end - s.start);
            HistogramBytes.write(out, s.histogram());
            out.varint(s.samples.size());
            s.samples.forEach((k, v) -> {
                out.varint(k.stack.length);
                for (StackFrame f : k.stack) {
                    frame(f);
                }
                labels(k.labels);
                out.varint(v[0]).varint(v[1]);
            });
        }

        /** Writes the reference of a value already written, or 0 and true for a new one (the caller writes it). */
        private boolean isNew(Object value) {
            Integer ref = refs.get(value);
            if (ref != null) {
                out.varint(ref);
                return false;
            }
            refs.put(value, refs.size() + 1);
            out.varint(0);
            return true;
        }

        private void string(String s) {
            if (isNew(new Text(s))) {
                out.string(s);
            }
        }

        private void frame(StackFrame f) {
            if (isNew(f)) {
                string(f.mappingFile());
                out.varint(f.function() == null ? 0 : 1);
                if (f.function() != null) {
                    string(f.function());
                }
                string(f.file());
                out.varint(f.line()).varint(f.address());
            }
        }

        private void labels(List<Label> labels) {
            if (isNew(new LabelList(labels))) {
                out.varint(labels.size());
                for (Label l : labels) {
                    string(l.key());
                    if (l.isNumeric()) {
                        out.varint(1).signed(l.num());
                        string(l.unit() == null ? "" : l.unit());
                    } else {
                        out.varint(0);
                        string(l.str());
                    }
                }
            }
        }
    }

    private static final class Reader {
        final BinaryIn in;
        private final Interner<Object> interner;
        private final List<Object> table = new ArrayList<>();

        Reader(BinaryIn in, Interner<Object> interner) {
            this.in = in;
            this.interner = interner;
        }

        List<Slot> slots() {
            int n = in.count();
            List<Slot> slots = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                Slot s = slot();
                if (!slots.isEmpty() && s.start <= slots.getLast().start) {
                    throw new IllegalArgumentException("slots out of order");
                }
                slots.add(s);
            }
            return slots;
        }

        Slot slot() {
            long start = in.signed();
            long length = in.nonNegative();
            FineHistogram h = HistogramBytes.read(in);
            ProfileSamples samples = new ProfileSamples();
            int n = in.count();
            for (int i = 0; i < n; i++) {
                StackFrame[] stack = new StackFrame[in.count()];
                for (int j = 0; j < stack.length; j++) {
                    stack[j] = frame();
                }
                List<Label> labels = labels();
                samples.put((SampleKey) interner.intern(new SampleKey(stack, labels)), in.nonNegative(), in.nonNegative());
            }
            return new Slot(start, start + length, h, samples);
        }

        /** The value a reference names, or null when a new one follows (the caller reads and {@link #add}s it). */
        private <T> T known(Class<T> type) {
            long ref = in.varint();
            if (ref == 0) {
                return null;
            }
            if (ref < 0 || ref > table.size() || !type.isInstance(table.get((int) ref - 1))) {
                throw new IllegalArgumentException("bad reference " + ref);
            }
            return type.cast(table.get((int) ref - 1));
        }

        /** Files a new value under the next number; written before anything it contains, so reserved first. */
        private int reserve() {
            table.add(null);
            return table.size() - 1;
        }

        private String string() {
            Text t = known(Text.class);
            if (t != null) {
                return t.value();
            }
            int slot = reserve();
            String s = in.string();
            table.set(slot, new Text(s));
            return s;
        }

        private StackFrame frame() {
            StackFrame f = known(StackFrame.class);
            if (f != null) {
                return f;
            }
            int slot = reserve();
            String mapping = string();
            long hasFunction = in.varint();
            String function = hasFunction == 1 ? string() : null;
            if (hasFunction > 1) {
                throw new IllegalArgumentException("bad function flag " + hasFunction);
            }
            f = (StackFrame) interner.intern(new StackFrame(mapping, function, string(), in.nonNegative(), in.varint()));
            table.set(slot, f);
            return f;
        }

        private List<Label> labels() {
            LabelList known = known(LabelList.class);
            if (known != null) {
                return known.labels();
            }
            int slot = reserve();
            int n = in.count();
            List<Label> labels = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                String key = string();
                long kind = in.varint();
                if (kind == 1) {
                    long num = in.signed();
                    labels.add(Label.num(key, num, string()));
                } else if (kind == 0) {
                    labels.add(Label.str(key, string()));
                } else {
                    throw new IllegalArgumentException("bad label kind " + kind);
                }
            }
            table.set(slot, new LabelList(List.copyOf(labels)));
            return labels;
        }
    }

    /** Wrappers keep strings, frames and label lists apart in one reference table. */
    private record Text(String value) {}

    private record LabelList(List<Label> labels) {}
}
