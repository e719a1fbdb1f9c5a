package dev.loupe.agent.ship;

import com.google.protobuf.ByteString;
import dev.loupe.agent.labels.CgroupLabels;
import dev.loupe.agent.relabel.Relabeling;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.ProfileSplitter;
import dev.loupe.pprof.parca.Label;
import dev.loupe.pprof.parca.LabelSet;
import dev.loupe.pprof.parca.RawProfileSeries;
import dev.loupe.pprof.parca.RawSample;
import dev.loupe.pprof.parca.WriteRawRequest;
import dev.loupe.pprof.proto.Mapping;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;
import java.util.stream.Stream;

/**
 * Turns one interval's host-wide profile into Parca WriteRaw requests: one series per process, labelled
 * {@code __name__}, {@code node}, {@code pid}, {@code comm}, {@code executable}, {@code build_id} (when
 * known), the process's {@code systemd_unit}, {@code systemd_user_unit} and {@code container_id} (when its
 * samples carry them) and the user's external labels; raw_profile is that process's gzipped pprof. The
 * user's relabel rules then rewrite each label set (a series they drop is not sent, and counted), and
 * labels starting with {@code __} other than {@code __name__} are removed (Parca refuses them). Series are
 * packed into as few requests as stay under {@code maxRequestBytes}; a single series larger than that goes
 * alone (Parca's own limit, 64 MiB, is the cap of the setting).
 */
public final class WriteRawEncoder {
    /** Room for the request's own framing around each series (tags, lengths, labels are counted exactly). */
    private static final int SERIES_OVERHEAD = 16;
    /** Sample labels that name the process, lifted into its series' labels. */
    private static final List<String> PROCESS_LABELS = Stream.concat(Stream.of("comm"), CgroupLabels.NAMES.stream()).toList();

    private final Map<String, String> externalLabels;
    private final Relabeling relabeling;
    private final long maxRequestBytes;
    private final IntFunction<Optional<String>> executableOf;
    private final AtomicLong droppedByRelabel = new AtomicLong();

    /** Without relabel rules. */
    public WriteRawEncoder(Map<String, String> externalLabels, long maxRequestBytes, IntFunction<Optional<String>> executableOf) {
        this(externalLabels, Relabeling.none(), maxRequestBytes, executableOf);
    }

    /**
     * @param externalLabels   added to every series (names already validated by config)
     * @param relabeling       applied to every series' labels, external ones included
     * @param maxRequestBytes  a request is split to stay under this
     * @param executableOf     a process's executable path (e.g. /proc/PID/exe), empty if unknown
     */
    public WriteRawEncoder(Map<String, String> externalLabels, Relabeling relabeling, long maxRequestBytes,
                           IntFunction<Optional<String>> executableOf) {
        this.externalLabels = Map.copyOf(externalLabels);
        this.relabeling = relabeling;
        this.maxRequestBytes = maxRequestBytes;
        this.executableOf = executableOf;
    }

    /** One encoded series: the labels it carries (for a Kafka key) and its serialized form. */
    public record Series(SortedMap<String, String> labels, RawProfileSeries message) {}

    /**
     * The series of one profile.
     *
     * @param seriesLabels labels of the host-wide series (at least {@code __name__}; {@code node})
     */
    public List<Series> series(Profile hostProfile, Map<String, String> seriesLabels) {
        return series(hostProfile, seriesLabels, true);
    }

    /**
     * @param perProcess one series per pid (CPU profiles); false: the profile is one host-wide series as it
     *                   is (latency profiles, whose samples are per function, not per process)
     */
    public List<Series> series(Profile hostProfile, Map<String, String> seriesLabels, boolean perProcess) {
        List<Series> out = new ArrayList<>();
        if (!perProcess) {
            SortedMap<String, String> labels = new TreeMap<>(externalLabels);
            labels.putAll(seriesLabels);
            relabeled(labels).ifPresent(l -> out.add(new Series(l, message(l, hostProfile))));
            return out;
        }
        for (var part : ProfileSplitter.byNumLabel(hostProfile, "pid").entrySet()) {
            Profile p = part.getValue();
            int pid = (int) (long) part.getKey();
            SortedMap<String, String> labels = new TreeMap<>(externalLabels);
            labels.putAll(seriesLabels); // ours win over external ones of the same name (config forbids them anyway)
            labels.put("pid", Integer.toString(pid));
            labels.putAll(firstStrLabels(p, PROCESS_LABELS));
            Optional<String> exe = pid > 0 ? executableOf.apply(pid) : Optional.empty();
            exe.ifPresent(e -> labels.put("executable", e));
            exe.flatMap(e -> buildIdOf(p, e)).ifPresent(b -> labels.put("build_id", b));
            relabeled(labels).ifPresent(l -> out.add(new Series(l, message(l, p))));
        }
        return out;
    }

    /** Series the relabel rules dropped since start. */
    public long seriesDroppedByRelabel() {
        return droppedByRelabel.get();
    }

    /**
     * The labels after the relabel rules, without {@code __} names but {@code __name__}; empty (and counted)
     * when the rules drop the series or leave it no label. Without rules the labels are sent as they are.
     */
    private Optional<SortedMap<String, String>> relabeled(SortedMap<String, String> labels) {
        if (relabeling.size() == 0) {
            return Optional.of(labels);
        }
        SortedMap<String, String> out = new TreeMap<>(relabeling.apply(labels));
        out.keySet().removeIf(name -> name.startsWith("__") && !name.equals("__name__"));
        if (out.isEmpty()) {
            droppedByRelabel.incrementAndGet();
            return Optional.empty();
        }
        return Optional.of(out);
    }

    private static RawProfileSeries message(SortedMap<String, String> labels, Profile p) {
        LabelSet.Builder set = LabelSet.newBuilder();
        labels.forEach((k, v) -> set.addLabels(Label.newBuilder().setName(k).setValue(v)));
        return RawProfileSeries.newBuilder().setLabels(set)
                .addSamples(RawSample.newBuilder().setRawProfile(ByteString.copyFrom(PprofFiles.gzip(p))))
                .build();
    }

    /** Packs series into requests under the size limit, in order. */
    public List<WriteRawRequest> requests(List<Series> series) {
        List<WriteRawRequest> out = new ArrayList<>();
        WriteRawRequest.Builder current = WriteRawRequest.newBuilder();
        long size = 0;
        for (Series s : series) {
            long bytes = s.message().getSerializedSize() + SERIES_OVERHEAD;
            if (current.getSeriesCount() > 0 && size + bytes > maxRequestBytes) {
                out.add(current.build());
                current = WriteRawRequest.newBuilder();
                size = 0;
            }
            current.addSeries(s.message());
            size += bytes;
        }
        if (current.getSeriesCount() > 0) {
            out.add(current.build());
        }
        return out;
    }

    /** Each of {@code keys}' first string value among the samples (one process's: the same on all of them). */
    private static Map<String, String> firstStrLabels(Profile p, List<String> keys) {
        Map<String, String> found = new LinkedHashMap<>();
        for (Sample s : p.getSampleList()) {
            for (var l : s.getLabelList()) {
                if (l.getStr() != 0) {
                    String key = p.getStringTable((int) l.getKey());
                    if (keys.contains(key)) {
                        found.putIfAbsent(key, p.getStringTable((int) l.getStr()));
                    }
                }
            }
            if (found.size() == keys.size()) {
                break;
            }
        }
        return found;
    }

    private static Optional<String> buildIdOf(Profile p, String executable) {
        for (Mapping m : p.getMappingList()) {
            if (p.getStringTable((int) m.getFilename()).equals(executable) && m.getBuildId() != 0) {
                return Optional.of(p.getStringTable((int) m.getBuildId()));
            }
        }
        return Optional.empty();
    }

    /** An encoder whose series name each process's executable from {@code /proc/PID/exe}. */
    public static WriteRawEncoder forHost(Map<String, String> externalLabels, Relabeling relabeling, long maxRequestBytes) {
        return new WriteRawEncoder(externalLabels, relabeling, maxRequestBytes, WriteRawEncoder::procExecutable);
    }

    /** The process's executable from /proc/PID/exe; empty once it has exited or when the link is unreadable. */
    public static Optional<String> procExecutable(int pid) {
        try {
            String target = java.nio.file.Files.readSymbolicLink(java.nio.file.Path.of("/proc", Integer.toString(pid), "exe")).toString();
            return Optional.of(target.endsWith(" (deleted)") ? target.substring(0, target.length() - 10) : target);
        } catch (java.io.IOException | UnsupportedOperationException | SecurityException e) {
            return Optional.empty();
        }
    }
}
