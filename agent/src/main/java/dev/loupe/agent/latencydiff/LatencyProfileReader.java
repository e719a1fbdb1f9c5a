package dev.loupe.agent.latencydiff;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.loupe.agent.regression.FineHistogram;
import dev.loupe.agent.regression.FunctionKey;
import dev.loupe.pprof.proto.Label;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import dev.loupe.pprof.proto.ValueType;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;

/**
 * A latency profile as Loupe writes it, read back into one {@link FineHistogram} per (binary, function): sample
 * types {@code calls/count} and {@code latency/nanoseconds}, and per sample the labels {@code function},
 * {@code binary} and {@code le_ns}, the exclusive upper bound in nanoseconds of the fine bucket its calls fell in
 * ({@code Long.MAX_VALUE} for the overflow bucket). The other labels (pid, comm, goid, le_us) and the caller
 * stacks are summed over.
 */
final class LatencyProfileReader {
    static final String CALLS = "calls";
    static final String LATENCY = "latency";
    static final String FUNCTION = "function";
    static final String BINARY = "binary";
    static final String LE_NS = "le_ns";

    /** Why a file is not a latency profile this command can compare, worded for the user. */
    static final class BadProfile extends Exception {
        BadProfile(String message) {
            super(message);
        }
    }

    private LatencyProfileReader() {}

    /** @throws BadProfile with a message that starts with the file's name */
    static Map<FunctionKey, FineHistogram> read(Path file) throws BadProfile {
        try {
            return histograms(parse(bytes(file)));
        } catch (BadProfile e) {
            throw new BadProfile(file + ": " + e.getMessage());
        }
    }

    private static byte[] bytes(Path file) throws BadProfile {
        try {
            return Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new BadProfile("no such file");
        } catch (AccessDeniedException e) {
            throw new BadProfile("permission denied");
        } catch (IOException e) {
            throw new BadProfile("cannot read: " + e.getMessage());
        }
    }

    /** Gzipped pprof as Loupe writes it, or the raw serialized profile that pprof tools also accept. */
    static Profile parse(byte[] bytes) throws BadProfile {
        if (bytes.length == 0) {
            throw new BadProfile("empty file");
        }
        boolean gzipped = bytes.length >= 2 && (bytes[0] & 0xff) == 0x1f && (bytes[1] & 0xff) == 0x8b;
        if (!gzipped) {
            Profile raw;
            try {
                raw = Profile.parseFrom(bytes);
            } catch (InvalidProtocolBufferException e) {
                throw new BadProfile("neither gzip nor a pprof profile");
            }
            if (raw.getSampleTypeCount() == 0) {
                // Protobuf parses many byte strings; one without sample types is not a profile of any kind.
                throw new BadProfile("neither gzip nor a pprof profile");
            }
            return raw;
        }
        byte[] inflated;
        try (InputStream in = new GZIPInputStream(new ByteArrayInputStream(bytes))) {
            inflated = in.readAllBytes();
        } catch (IOException e) {
            throw new BadProfile("corrupt gzip data (" + e.getMessage() + ")");
        }
        try {
            return Profile.parseFrom(inflated);
        } catch (InvalidProtocolBufferException e) {
            throw new BadProfile("gzip, but not a pprof profile inside (" + e.getMessage() + ")");
        }
    }

    static Map<FunctionKey, FineHistogram> histograms(Profile p) throws BadProfile {
        Strings strings = new Strings(p.getStringTableList());
        int calls = callsIndex(p, strings);
        Map<FunctionKey, FineHistogram> byFunction = new HashMap<>();
        int withoutLe = 0;
        for (int i = 0; i < p.getSampleCount(); i++) {
            Sample s = p.getSample(i);
            if (s.getValueCount() != p.getSampleTypeCount()) {
                throw new BadProfile("corrupt: sample " + i + " has " + s.getValueCount() + " values for "
                        + p.getSampleTypeCount() + " sample types");
            }
            String function = null;
            String binary = null;
            Long leNs = null;
            for (Label l : s.getLabelList()) {
                switch (strings.get(l.getKey())) {
                    case FUNCTION -> function = strings.get(l.getStr());
                    case BINARY -> binary = strings.get(l.getStr());
                    case LE_NS -> leNs = l.getStr() == 0 ? l.getNum() : null;
                    default -> { }
                }
            }
            if (function == null || function.isEmpty() || binary == null || binary.isEmpty()) {
                throw new BadProfile("not a latency profile: sample " + i + " has no function and binary labels");
            }
            if (leNs == null) {
                withoutLe++;
                continue;
            }
            long n = s.getValue(calls);
            if (n < 0 || leNs <= 0) {
                throw new BadProfile("corrupt: sample " + i + " (" + function + ") has " + n + " calls at le_ns " + leNs);
            }
            // le_ns is the bucket's exclusive upper bound, so le_ns - 1 is its largest value; the overflow bucket's
            // Long.MAX_VALUE maps to overflow the same way.
            byFunction.computeIfAbsent(new FunctionKey(binary, function), k -> new FineHistogram())
                    .addToBucket(FineHistogram.bucketOf(leNs - 1), n);
        }
        if (withoutLe > 0 && withoutLe == p.getSampleCount()) {
            throw new BadProfile("its samples have no le_ns label: written by an older Loupe, whose le_us buckets "
                    + "(powers of two) are too coarse for a verdict; compare profiles written by this version");
        }
        if (withoutLe > 0) {
            throw new BadProfile("corrupt: " + withoutLe + " of " + p.getSampleCount() + " samples have no le_ns label");
        }
        return byFunction;
    }

    private static int callsIndex(Profile p, Strings strings) throws BadProfile {
        List<ValueType> types = p.getSampleTypeList();
        int calls = -1;
        boolean latency = false;
        StringBuilder seen = new StringBuilder();
        for (int i = 0; i < types.size(); i++) {
            String type = strings.get(types.get(i).getType());
            String unit = strings.get(types.get(i).getUnit());
            seen.append(i == 0 ? "" : ", ").append(type).append('/').append(unit);
            if (type.equals(CALLS) && unit.equals("count")) {
                calls = i;
            } else if (type.equals(LATENCY) && unit.equals("nanoseconds")) {
                latency = true;
            }
        }
        if (calls < 0 || !latency) {
            throw new BadProfile("not a latency profile: its sample types are " + (types.isEmpty() ? "none" : seen)
                    + ", not calls/count and latency/nanoseconds");
        }
        return calls;
    }

    /** The string table, with an index out of range reported as corruption rather than thrown as a crash. */
    private record Strings(List<String> table) {
        String get(long index) throws BadProfile {
            if (index < 0 || index >= table.size()) {
                throw new BadProfile("corrupt: string index " + index + " of " + table.size());
            }
            return table.get((int) index);
        }
    }
}
