package dev.loupe.config;

import java.net.InetSocketAddress;
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
}
