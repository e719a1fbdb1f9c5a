package dev.loupe.agent.relabel;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.regex.MatchResult;
import java.util.regex.Pattern;

/** One validated rule and what it does to a label set (Prometheus' {@code relabel} for one config). */
record RelabelRule(Action action, List<String> sourceLabels, String separator, GoRegex regex, String targetLabel,
                   String replacement, long modulus) {

    enum Action {
        REPLACE, KEEP, DROP, KEEPEQUAL, DROPEQUAL, HASHMOD, LABELMAP, LABELDROP, LABELKEEP, LOWERCASE, UPPERCASE;

        String yamlName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private static final Pattern LABEL_NAME = Pattern.compile("[a-zA-Z_][a-zA-Z0-9_]*");
    /** A label name with {@code $1}/{@code ${name}} references in it (Prometheus' legacy check, without its nested repetition). */
    private static final Pattern LABEL_NAME_TEMPLATE = Pattern.compile(
            "(?:[a-zA-Z_]|\\$(?:\\{\\w++}|\\w++))(?:\\w|\\$(?:\\{\\w++}|\\w++))*+");

    static boolean isLabelName(String s) {
        return LABEL_NAME.matcher(s).matches();
    }

    static boolean isLabelNameTemplate(String s) {
        return LABEL_NAME_TEMPLATE.matcher(s).matches();
    }

    /** Applies this rule to {@code labels} (no empty values in it); false when the set is dropped. */
    boolean apply(SortedMap<String, String> labels) {
        String value = joinedSourceValues(labels);
        switch (action) {
            case DROP -> {
                return !regex.matches(value);
            }
            case KEEP -> {
                return regex.matches(value);
            }
            case DROPEQUAL -> {
                return !labels.getOrDefault(targetLabel, "").equals(value);
            }
            case KEEPEQUAL -> {
                return labels.getOrDefault(targetLabel, "").equals(value);
            }
            case REPLACE -> replace(labels, value);
            case LOWERCASE -> set(labels, targetLabel, value.toLowerCase(Locale.ROOT));
            case UPPERCASE -> set(labels, targetLabel, value.toUpperCase(Locale.ROOT));
            case HASHMOD -> set(labels, targetLabel, Long.toUnsignedString(Long.remainderUnsigned(md5Low64(value), modulus)));
            case LABELMAP -> {
                for (Map.Entry<String, String> l : new ArrayList<>(labels.entrySet())) {
                    MatchResult m = regex.match(l.getKey());
                    String name = m == null ? "" : regex.expand(replacement, m);
                    if (isLabelName(name)) { // Prometheus would set any name and fail later, at ingestion
                        set(labels, name, l.getValue());
                    }
                }
            }
            case LABELDROP -> labels.keySet().removeIf(regex::matches);
            case LABELKEEP -> labels.keySet().removeIf(name -> !regex.matches(name));
        }
        return true;
    }

    private String joinedSourceValues(Map<String, String> labels) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < sourceLabels.size(); i++) {
            b.append(i == 0 ? "" : separator).append(labels.getOrDefault(sourceLabels.get(i), ""));
        }
        return b.toString();
    }

    /** No match: nothing. A target that expands to no valid name: nothing. An empty result deletes the target. */
    private void replace(SortedMap<String, String> labels, String value) {
        MatchResult m = regex.match(value);
        if (m == null) {
            return;
        }
        String target = regex.expand(targetLabel, m);
        if (!isLabelName(target)) {
            return;
        }
        set(labels, target, regex.expand(replacement, m));
    }

    /** An empty value is no label (as in Prometheus' label builder). */
    private static void set(SortedMap<String, String> labels, String name, String value) {
        if (value.isEmpty()) {
            labels.remove(name);
        } else {
            labels.put(name, value);
        }
    }

    /** The last 8 bytes of the MD5 of {@code value}, big-endian: Prometheus' hashmod input. */
    static long md5Low64(String value) {
        try {
            byte[] sum = MessageDigest.getInstance("MD5").digest(value.getBytes(StandardCharsets.UTF_8));
            return ByteBuffer.wrap(sum, 8, 8).getLong();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has MD5", e);
        }
    }

    static SortedMap<String, String> nonEmpty(Map<String, String> labels) {
        SortedMap<String, String> m = new TreeMap<>();
        labels.forEach((k, v) -> {
            if (!v.isEmpty()) {
                m.put(k, v);
            }
        });
        return m;
    }
}
