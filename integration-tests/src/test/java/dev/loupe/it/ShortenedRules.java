package dev.loupe.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A copy of a Prometheus rule file with every alert's {@code for:} set to a shorter duration and nothing else
 * changed: tests may wait less, never alert on another expression. The copy is checked against the original:
 * without its {@code for:} lines it is byte-identical, and it has one {@code for:} per alert.
 */
public final class ShortenedRules {
    /** The rules users deploy. */
    public static final Path LOUPE_RULES = Path.of(System.getProperty("loupe.repo", "..")).toAbsolutePath().normalize()
            .resolve("config/alerting/loupe-rules.yml");

    static final Pattern FOR_LINE = Pattern.compile("(?m)^( +for: )(\\S+)$");
    private static final Pattern ALERT_LINE = Pattern.compile("(?m)^ +- alert: \\S+$");

    private ShortenedRules() {}

    /** Writes {@code source} to {@code target} with each {@code for:} value replaced by {@code forValue} (e.g. "5s"). */
    public static Path write(Path source, String forValue, Path target) throws IOException {
        if (!forValue.matches("\\d+[smh]")) {
            throw new IllegalArgumentException("not a Prometheus duration: " + forValue);
        }
        String original = Files.readString(source);
        String shortened = FOR_LINE.matcher(original).replaceAll("$1" + Matcher.quoteReplacement(forValue));
        check(original, shortened, forValue);
        return Files.writeString(target, shortened);
    }

    /** Throws unless {@code shortened} is {@code original} with only the {@code for:} values changed, each to {@code forValue}. */
    static void check(String original, String shortened, String forValue) {
        long alerts = ALERT_LINE.matcher(original).results().count();
        long fors = FOR_LINE.matcher(original).results().count();
        if (alerts == 0 || fors != alerts) {
            throw new IllegalStateException(alerts + " alerts and " + fors + " for: lines in the rules: each alert needs one");
        }
        if (!FOR_LINE.matcher(original).replaceAll("").equals(FOR_LINE.matcher(shortened).replaceAll(""))) {
            throw new IllegalStateException("the copy changed more than the for: lines");
        }
        long rewritten = FOR_LINE.matcher(shortened).results().filter(m -> m.group(2).equals(forValue)).count();
        if (rewritten != fors) {
            throw new IllegalStateException(rewritten + " of " + fors + " for: lines say " + forValue);
        }
    }
}
