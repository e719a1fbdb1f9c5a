package dev.loupe.config;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parsing and range checks shared by the YAML loader and the command line. Messages say what is wrong. */
final class Values {
    static final int MIN_HZ = 1;
    static final int MAX_HZ = 1000;
    static final Duration MIN_INTERVAL = Duration.ofSeconds(1);
    static final Duration MAX_INTERVAL = Duration.ofHours(1);
    private static final Pattern DURATION_PART = Pattern.compile("(\\d+)(ms|s|m|h)");

    private Values() {}

    static int frequency(String text) {
        int hz;
        try {
            hz = Integer.parseInt(text.trim());
        } catch (NumberFormatException e) {
            hz = -1;
        }
        if (hz < MIN_HZ || hz > MAX_HZ) {
            throw new IllegalArgumentException("must be an integer between " + MIN_HZ + " and " + MAX_HZ + " Hz, got \"" + text + "\"");
        }
        return hz;
    }

    /** {@code 500ms}, {@code 10s}, {@code 2m}, {@code 1h}, or combinations such as {@code 1m30s}. */
    static Duration duration(String text) {
        String t = text.trim();
        Matcher m = DURATION_PART.matcher(t);
        Duration d = Duration.ZERO;
        int pos = 0;
        while (pos < t.length() && m.find(pos) && m.start() == pos) {
            long n = Long.parseLong(m.group(1));
            d = d.plus(switch (m.group(2)) {
                case "ms" -> Duration.ofMillis(n);
                case "s" -> Duration.ofSeconds(n);
                case "m" -> Duration.ofMinutes(n);
                default -> Duration.ofHours(n);
            });
            pos = m.end();
        }
        if (t.isEmpty() || pos != t.length()) {
            throw new IllegalArgumentException("must be a duration such as 500ms, 10s, 2m, 1h or 1m30s, got \"" + text + "\"");
        }
        return d;
    }

    static Duration interval(String text) {
        Duration d = duration(text);
        if (d.compareTo(MIN_INTERVAL) < 0 || d.compareTo(MAX_INTERVAL) > 0) {
            throw new IllegalArgumentException("must be between 1s and 1h, got \"" + text + "\"");
        }
        return d;
    }

    static Duration runDuration(String text) {
        Duration d = duration(text);
        if (d.isZero()) {
            throw new IllegalArgumentException("must be longer than 0, got \"" + text + "\"");
        }
        return d;
    }

    static int pid(String text) {
        int pid;
        try {
            pid = Integer.parseInt(text.trim());
        } catch (NumberFormatException e) {
            pid = -1;
        }
        if (pid < 1) {
            throw new IllegalArgumentException("must be a positive process id, got \"" + text + "\"");
        }
        return pid;
    }

    /** {@code host:port}, {@code [v6]:port}, or null for {@code off}. Never resolves names. */
    /** Longest Unix domain socket path Linux binds (sun_path is 108 bytes with its terminating NUL). */
    static final int MAX_SOCKET_PATH_BYTES = 107;

    /** {@code off} or a path a Unix domain socket can bind. */
    static java.util.Optional<Path> unixSocket(String text) {
        String t = text.trim();
        if (t.isEmpty()) {
            throw new IllegalArgumentException("must be a path or off");
        }
        if (t.equals("off")) {
            return java.util.Optional.empty();
        }
        int bytes = t.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
        if (bytes > MAX_SOCKET_PATH_BYTES) {
            throw new IllegalArgumentException("a Unix socket path has at most " + MAX_SOCKET_PATH_BYTES + " bytes, got "
                    + bytes + ": " + t);
        }
        return java.util.Optional.of(Path.of(t));
    }

    static InetSocketAddress httpAddress(String text) {
        String t = text.trim();
        if (t.equals("off")) {
            return null;
        }
        int colon = t.lastIndexOf(':');
        if (colon <= 0 || colon == t.length() - 1) {
            throw new IllegalArgumentException("must be host:port (e.g. 127.0.0.1:7071) or off, got \"" + text + "\"");
        }
        String host = t.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        } else if (host.contains(":")) {
            throw new IllegalArgumentException("IPv6 addresses need brackets, e.g. [::1]:7071, got \"" + text + "\"");
        }
        int port;
        try {
            port = Integer.parseInt(t.substring(colon + 1));
        } catch (NumberFormatException e) {
            port = -1;
        }
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port must be 1..65535, got \"" + t.substring(colon + 1) + "\"");
        }
        return new InetSocketAddress(host, port); // IP literals are not looked up
    }

    private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*(B|KiB|MiB|GiB)?");

    /** A size such as {@code 64MiB}, {@code 512KiB} or plain bytes; 1 MiB .. 4 GiB. */
    static long tableBudget(String text) {
        java.util.regex.Matcher m = SIZE.matcher(text.trim());
        if (!m.matches()) {
            throw new IllegalArgumentException("must be a size such as 64MiB, 512KiB or 1GiB, got \"" + text + "\"");
        }
        long n;
        try {
            n = Long.parseLong(m.group(1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("size " + text + " is too large");
        }
        int shift = m.group(2) == null || m.group(2).equals("B") ? 0 : m.group(2).equals("KiB") ? 10 : m.group(2).equals("MiB") ? 20 : 30;
        if (n > (4L << 30) >> shift || (n << shift) < (1L << 20)) {
            throw new IllegalArgumentException("must be between 1MiB and 4GiB, got " + text);
        }
        return n << shift;
    }

    static boolean onOff(String text) {
        return switch (text.trim()) {
            case "on", "true" -> true;
            case "off", "false" -> false;
            default -> throw new IllegalArgumentException("must be on or off, got \"" + text + "\"");
        };
    }

    /** {@code host:port} where host may be a DNS name (resolved when connecting), an IPv4 literal or [IPv6]. */
    static String hostPort(String text) {
        String t = text.trim();
        int colon = t.lastIndexOf(':');
        if (colon <= 0 || colon == t.length() - 1) {
            throw new IllegalArgumentException("must be host:port (e.g. parca.example.com:7070), got \"" + text + "\"");
        }
        String host = t.substring(0, colon);
        if (host.contains(":") && !(host.startsWith("[") && host.endsWith("]"))) {
            throw new IllegalArgumentException("IPv6 addresses need brackets, e.g. [::1]:7070, got \"" + text + "\"");
        }
        if (!host.matches("\\[[0-9a-fA-F:.]+]|[A-Za-z0-9._-]+")) {
            throw new IllegalArgumentException("\"" + host + "\" is not a host name or IP address");
        }
        int port;
        try {
            port = Integer.parseInt(t.substring(colon + 1));
        } catch (NumberFormatException e) {
            port = -1;
        }
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port must be 1..65535, got \"" + t.substring(colon + 1) + "\"");
        }
        return t;
    }

    /** {@code host:port[,host:port...]} (Kafka's bootstrap.servers). */
    static String hostPorts(String text) {
        if (text.isBlank()) {
            throw new IllegalArgumentException("must list at least one host:port");
        }
        java.util.List<String> parts = new java.util.ArrayList<>();
        for (String part : text.split(",")) {
            parts.add(hostPort(part));
        }
        return String.join(",", parts);
    }

    /** A size between {@code min} and {@code max} bytes: {@code 16MiB}, {@code 1GiB}, or plain bytes. */
    static long size(String text, long min, long max) {
        java.util.regex.Matcher m = SIZE.matcher(text.trim());
        if (!m.matches()) {
            throw new IllegalArgumentException("must be a size such as 16MiB, 512KiB or 1GiB, got \"" + text + "\"");
        }
        int shift = m.group(2) == null || m.group(2).equals("B") ? 0 : m.group(2).equals("KiB") ? 10 : m.group(2).equals("MiB") ? 20 : 30;
        long n;
        try {
            n = Long.parseLong(m.group(1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("size " + text + " is too large");
        }
        if (n > max >> shift || (n << shift) < min || (n << shift) > max) {
            throw new IllegalArgumentException("must be between " + human(min) + " and " + human(max) + ", got " + text);
        }
        return n << shift;
    }

    private static String human(long bytes) {
        if (bytes % (1L << 30) == 0) {
            return (bytes >> 30) + "GiB";
        }
        if (bytes % (1L << 20) == 0) {
            return (bytes >> 20) + "MiB";
        }
        return bytes % 1024 == 0 ? (bytes >> 10) + "KiB" : bytes + "B";
    }

    /** A Prometheus label name that is not reserved ({@code __} prefix) and not one Loupe sets itself. */
    static String labelName(String text) {
        String t = text.trim();
        if (!t.matches("[a-zA-Z_][a-zA-Z0-9_]*")) {
            throw new IllegalArgumentException("\"" + text + "\" is not a valid label name ([a-zA-Z_][a-zA-Z0-9_]*)");
        }
        if (t.startsWith("__")) {
            throw new IllegalArgumentException("label names starting with __ are reserved, got \"" + t + "\"");
        }
        if (java.util.Set.of("node", "pid", "comm", "executable", "build_id").contains(t)) {
            throw new IllegalArgumentException("label \"" + t + "\" is set by Loupe on every series");
        }
        return t;
    }

    /** An HTTP header name (RFC 9110 token); values must not contain line breaks. */
    static String headerName(String text) {
        String t = text.trim();
        if (!t.matches("[!#$%&'*+.^_`|~0-9A-Za-z-]+")) {
            throw new IllegalArgumentException("\"" + text + "\" is not a valid HTTP header name");
        }
        String lower = t.toLowerCase(java.util.Locale.ROOT);
        if (lower.equals("authorization") || lower.startsWith("grpc-") || lower.equals("content-type") || lower.equals("te")) {
            throw new IllegalArgumentException("header \"" + t + "\" is set by Loupe (use bearer-token-file for authorization)");
        }
        return t;
    }

    static String headerValue(String text) {
        if (text.indexOf('\r') >= 0 || text.indexOf('\n') >= 0) {
            throw new IllegalArgumentException("header values cannot contain line breaks");
        }
        return text;
    }

    static boolean bool(String text) {
        return switch (text.trim()) {
            case "true", "on", "yes" -> true;
            case "false", "off", "no" -> false;
            default -> throw new IllegalArgumentException("must be true or false, got \"" + text + "\"");
        };
    }

    static String topic(String text) {
        String t = text.trim();
        if (!t.matches("[a-zA-Z0-9._-]{1,249}") || t.equals(".") || t.equals("..")) {
            throw new IllegalArgumentException("\"" + text + "\" is not a valid Kafka topic name ([a-zA-Z0-9._-], 1..249 characters)");
        }
        return t;
    }

    static java.nio.file.Path path(String text) {
        if (text.isBlank()) {
            throw new IllegalArgumentException("must name a file");
        }
        return java.nio.file.Path.of(text.trim());
    }
}
