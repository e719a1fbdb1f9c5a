package dev.loupe.unwinder.ehframe;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/unwind-table-format.md's table of rule kinds is the code's: every {@code UnwindRule.KIND_*} constant (found by
 * reflection, so a kind added or renamed is seen) has a row with its name (without {@code KIND_}) and value, and every
 * row names a constant that exists, with its value.
 */
class UnwindRuleKindsDocTest {
    private static final Path DOC = Path.of("../docs/unwind-table-format.md");
    private static final String PREFIX = "KIND_";
    private static final Pattern HEADER = Pattern.compile("^\\|\\s*kind\\s*\\|\\s*value\\s*\\|.*\\|\\s*$");
    private static final Pattern SEPARATOR = Pattern.compile("^\\|(\\s*:?-+:?\\s*\\|)+\\s*$");
    private static final Pattern ROW = Pattern.compile("^\\|\\s*`([A-Z][A-Z0-9_]*)`\\s*\\|\\s*(\\d+)\\s*\\|.*\\|\\s*$");

    @Test
    void theDocumentedKindsAreTheConstants() throws IOException {
        Map<String, Integer> code = kindConstants();
        assertTrue(code.size() >= 5, "reflection found too few KIND_ constants: " + code);
        Map<String, Integer> doc = documentedKinds(Files.readString(DOC, StandardCharsets.UTF_8));

        List<String> problems = new ArrayList<>();
        code.forEach((name, value) -> {
            if (!doc.containsKey(name)) {
                problems.add("UnwindRule." + PREFIX + name + " = " + value + " has no row");
            } else if (!doc.get(name).equals(value)) {
                problems.add(name + " is documented as " + doc.get(name) + ", UnwindRule." + PREFIX + name + " = " + value);
            }
        });
        doc.forEach((name, value) -> {
            if (!code.containsKey(name)) {
                problems.add("row " + name + " = " + value + ": UnwindRule declares no " + PREFIX + name);
            }
        });
        assertEquals(List.of(), problems, "the rule kinds table in " + DOC + " and UnwindRule's KIND_ constants differ");
    }

    @Test
    void theParserReadsOneTableAndRefusesWhatItCannotRead() {
        String text = """
                text before
                | kind | value | meaning |
                | --- | --- | --- |
                | `A` | 0 | first, with a | in it |
                | `B_C` | 7 | second |

                | kind | value | meaning |
                """;
        assertEquals(Map.of("A", 0, "B_C", 7), documentedKinds(text.substring(0, text.indexOf("\n\n") + 1)));
        assertThrows(AssertionError.class, () -> documentedKinds(text), "two tables");
        assertThrows(AssertionError.class, () -> documentedKinds("no table\n"), "no table");
        assertThrows(AssertionError.class, () -> documentedKinds("""
                | kind | value | meaning |
                | --- | --- | --- |
                | A | 0 | no backticks |
                """), "a row without a backticked name");
        assertThrows(AssertionError.class, () -> documentedKinds("""
                | kind | value | meaning |
                | --- | --- | --- |
                | `A` | 0 | x |
                | `A` | 1 | twice |
                """), "a name twice");
        assertThrows(AssertionError.class, () -> documentedKinds("""
                | kind | value | meaning |
                | --- | --- | --- |
                """), "an empty table");
    }

    /** {@code KIND_X} → value for every {@code public static final int KIND_*} of UnwindRule, as {@code X}. */
    private static Map<String, Integer> kindConstants() {
        Map<String, Integer> kinds = new TreeMap<>();
        List<String> odd = new ArrayList<>();
        for (Field f : UnwindRule.class.getDeclaredFields()) {
            if (!f.getName().startsWith(PREFIX)) {
                continue;
            }
            int m = f.getModifiers();
            if (!Modifier.isPublic(m) || !Modifier.isStatic(m) || !Modifier.isFinal(m) || f.getType() != int.class) {
                odd.add(f.toString());
                continue;
            }
            try {
                kinds.put(f.getName().substring(PREFIX.length()), f.getInt(null));
            } catch (IllegalAccessException e) {
                throw new AssertionError(f + " unreadable", e);
            }
        }
        assertEquals(List.of(), odd, "a KIND_ field that is not a public static final int");
        return kinds;
    }

    /**
     * The rows of the one table whose header starts {@code | kind | value |}: each {@code | `NAME` | VALUE | ... |},
     * up to the first line that is not a table row.
     */
    static Map<String, Integer> documentedKinds(String markdown) {
        List<String> lines = markdown.lines().toList();
        List<Integer> headers = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            if (HEADER.matcher(lines.get(i).strip()).matches()) {
                headers.add(i);
            }
        }
        if (headers.size() != 1) {
            throw new AssertionError("expected one '| kind | value | ... |' table, found " + headers.size());
        }
        int at = headers.get(0) + 1;
        if (at >= lines.size() || !SEPARATOR.matcher(lines.get(at).strip()).matches()) {
            throw new AssertionError("the kinds table's header is not followed by a '| --- |' line");
        }
        Map<String, Integer> kinds = new TreeMap<>();
        for (at++; at < lines.size() && lines.get(at).strip().startsWith("|"); at++) {
            String line = lines.get(at).strip();
            Matcher m = ROW.matcher(line);
            if (!m.matches()) {
                throw new AssertionError("not a '| `NAME` | VALUE | meaning |' row: " + line);
            }
            if (kinds.put(m.group(1), Integer.parseInt(m.group(2))) != null) {
                throw new AssertionError("kind documented twice: " + m.group(1));
            }
        }
        if (kinds.isEmpty()) {
            throw new AssertionError("the kinds table has no rows");
        }
        return kinds;
    }
}
