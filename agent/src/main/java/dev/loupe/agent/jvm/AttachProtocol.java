package dev.loupe.agent.jvm;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * HotSpot's attach protocol, version 1 (every HotSpot from JDK 6 to 25 reads it; JDK 24 added a version 2 that
 * clients must ask for): the request is NUL-terminated strings, {@code <version> <command> <arg> <arg> <arg>},
 * always three arguments (empty when unused), a command of at most 16 bytes and arguments of at most 1024; the
 * reply is the result as a decimal line ({@code 0} = the operation ran), then the operation's output, until
 * the JVM closes the connection. {@code jcmd} takes the whole diagnostic command line as its first argument.
 */
final class AttachProtocol {
    static final String VERSION = "1";
    static final int ARGUMENTS = 3;
    static final int MAX_COMMAND_BYTES = 16;
    static final int MAX_ARGUMENT_BYTES = 1024;

    private AttachProtocol() {}

    /** The request bytes: {@code 1\0command\0arg0\0arg1\0arg2\0}. */
    static byte[] request(String command, String... args) {
        if (args.length > ARGUMENTS) {
            throw new IllegalArgumentException("version 1 carries " + ARGUMENTS + " arguments, not " + args.length);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        put(out, VERSION, 8);
        put(out, command, MAX_COMMAND_BYTES);
        for (int i = 0; i < ARGUMENTS; i++) {
            put(out, i < args.length ? args[i] : "", MAX_ARGUMENT_BYTES);
        }
        return out.toByteArray();
    }

    /** The request that makes a JVM write {@code /tmp/perf-<pid>.map}: {@code jcmd Compiler.perfmap}. */
    static byte[] perfMapRequest() {
        return request("jcmd", "Compiler.perfmap");
    }

    private static void put(ByteArrayOutputStream out, String s, int max) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        if (b.length > max) {
            throw new IllegalArgumentException("'" + s + "' is longer than " + max + " bytes");
        }
        for (byte x : b) {
            if (x == 0) {
                throw new IllegalArgumentException("a NUL inside '" + s + "'");
            }
        }
        out.writeBytes(b);
        out.write(0);
    }

    /** The operation's result code and output. */
    record Reply(int result, String output) {
        /** The output's first non-blank line, for a log line ("" when none). */
        String firstLine() {
            return output.lines().map(String::strip).filter(l -> !l.isEmpty()).findFirst().orElse("");
        }
    }

    /** Parses what the JVM sent before closing: a decimal result line, then the output. */
    static Reply parseReply(byte[] bytes, int length) {
        int nl = -1;
        for (int i = 0; i < length; i++) {
            if (bytes[i] == '\n') {
                nl = i;
                break;
            }
        }
        if (nl < 0) {
            throw new IllegalArgumentException(length == 0 ? "the JVM closed the connection without a reply"
                    : "no result line in the reply: '" + new String(bytes, 0, Math.min(length, 80), StandardCharsets.UTF_8) + "'");
        }
        String code = new String(bytes, 0, nl, StandardCharsets.US_ASCII).strip();
        int result;
        try {
            result = Integer.parseInt(code);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("the reply's result line is not a number: '" + code + "'");
        }
        return new Reply(result, new String(bytes, nl + 1, length - nl - 1, StandardCharsets.UTF_8));
    }
}
