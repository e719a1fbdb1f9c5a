package dev.loupe.agent.relabel;

import java.util.HashMap;
import java.util.Map;
import java.util.regex.MatchResult;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * A Prometheus relabel regex: RE2 syntax, fully anchored as Prometheus anchors it ({@code ^(?s:RE)$}),
 * run by {@code java.util.regex}. The translation keeps RE2's meaning where Java's would differ:
 * {@code (?P<name>…)} groups, POSIX classes ({@code [[:alpha:]]}), scripts ({@code \p{Greek}}), octal
 * escapes, {@code \v}, {@code [} and {@code &&} inside a class
 * (literal in RE2, union/intersection in Java), a {@code {} that is no repetition (literal in RE2),
 * {@code $} (end of text, not before a final newline) and Unicode case folding for {@code (?i)}. RE2
 * syntax Java would read differently or RE2 refuses (lookaround, atomic groups, {@code (?U)},
 * {@code \C}) is an error. Java's backtracking has no RE2 linear-time guarantee; label values are short.
 */
final class GoRegex {
    private static final Pattern MULTILINE_FLAG = Pattern.compile("\\(\\?[ims]*m[ims]*(?:-[ims]*)?[:)]");
    private static final Pattern REPETITION = Pattern.compile("\\{\\d+(?:,\\d*)?}");
    private static final Map<String, String> POSIX = Map.ofEntries(
            Map.entry("alnum", "\\p{Alnum}"), Map.entry("alpha", "\\p{Alpha}"), Map.entry("ascii", "\\p{ASCII}"),
            Map.entry("blank", "\\p{Blank}"), Map.entry("cntrl", "\\p{Cntrl}"), Map.entry("digit", "\\p{Digit}"),
            Map.entry("graph", "\\p{Graph}"), Map.entry("lower", "\\p{Lower}"), Map.entry("print", "\\p{Print}"),
            Map.entry("punct", "\\p{Punct}"), Map.entry("space", "\\p{Space}"), Map.entry("upper", "\\p{Upper}"),
            Map.entry("word", "\\w"), Map.entry("xdigit", "\\p{XDigit}"));

    private final String source;
    private final Pattern pattern;
    private final Map<String, Integer> names;

    private GoRegex(String source, Pattern pattern, Map<String, Integer> names) {
        this.source = source;
        this.pattern = pattern;
        this.names = names;
    }

    /** Compiles {@code re}; throws {@link IllegalArgumentException} saying what is wrong and where. */
    static GoRegex compile(String re) {
        Translation t = new Translation(re);
        String java = t.translate();
        try {
            Pattern p = Pattern.compile("^(?s:" + java + ")\\z", Pattern.UNIX_LINES | Pattern.UNICODE_CASE);
            return new GoRegex(re, p, t.names);
        } catch (PatternSyntaxException e) {
            throw new IllegalArgumentException("invalid regular expression \"" + re + "\": " + e.getDescription());
        }
    }

    String source() {
        return source;
    }

    boolean matches(String s) {
        return pattern.matcher(s).matches();
    }

    /** The match of all of {@code s}, or null. */
    MatchResult match(String s) {
        Matcher m = pattern.matcher(s);
        return m.matches() ? m.toMatchResult() : null;
    }

    /**
     * Go's {@code Regexp.Expand}: {@code $name} or {@code ${name}} is replaced by that group (a number or a
     * {@code (?P<name>)} name; the longest run of letters, digits and '_' after {@code $}, so {@code $1x} is
     * group "1x"); an unknown or unmatched group by nothing; {@code $$} is a '$'; a '$' starting no valid
     * reference stays a '$'.
     */
    String expand(String template, MatchResult m) {
        StringBuilder out = new StringBuilder();
        int i = 0;
        int n = template.length();
        while (i < n) {
            char c = template.charAt(i);
            if (c != '$') {
                out.append(c);
                i++;
                continue;
            }
            if (i + 1 < n && template.charAt(i + 1) == '$') {
                out.append('$');
                i += 2;
                continue;
            }
            boolean brace = i + 1 < n && template.charAt(i + 1) == '{';
            int start = i + (brace ? 2 : 1);
            int end = start;
            while (end < n) {
                int cp = template.codePointAt(end);
                if (!Character.isLetter(cp) && !Character.isDigit(cp) && cp != '_') {
                    break;
                }
                end += Character.charCount(cp);
            }
            if (end == start || (brace && (end >= n || template.charAt(end) != '}'))) {
                out.append('$'); // malformed: the '$' is text
                i++;
                continue;
            }
            String group = group(template.substring(start, end), m);
            if (group != null) {
                out.append(group);
            }
            i = brace ? end + 1 : end;
        }
        return out.toString();
    }

    private String group(String name, MatchResult m) {
        int num = number(name);
        if (num < 0) {
            Integer named = names.get(name);
            num = named == null ? -1 : named;
        }
        return num >= 0 && num <= m.groupCount() ? m.group(num) : null;
    }

    /** A group number as Go reads it: digits only, no leading zero, below 10^8; else -1. */
    private static int number(String name) {
        int num = 0;
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c < '0' || c > '9' || num >= 100_000_000) {
                return -1;
            }
            num = num * 10 + (c - '0');
        }
        return name.length() > 1 && name.charAt(0) == '0' ? -1 : num;
    }

    /** One pass over an RE2 pattern writing the Java pattern with the same meaning. */
    private static final class Translation {
        private final String re;
        private final boolean multiline;
        private final StringBuilder out = new StringBuilder();
        private final Map<String, Integer> names = new HashMap<>();
        private int groups;

        Translation(String re) {
            this.re = re;
            this.multiline = MULTILINE_FLAG.matcher(re).find();
        }

        String translate() {
            int i = 0;
            while (i < re.length()) {
                char c = re.charAt(i);
                switch (c) {
                    case '\\' -> i = escape(i);
                    case '[' -> i = charClass(i);
                    case '(' -> i = group(i);
                    case '$' -> {
                        out.append(multiline ? "$" : "\\z"); // RE2's $ without (?m) is the end of the text
                        i++;
                    }
                    case '{' -> {
                        Matcher rep = REPETITION.matcher(re).region(i, re.length());
                        if (rep.lookingAt()) {
                            out.append(rep.group());
                            i = rep.end();
                        } else {
                            out.append("\\{"); // RE2: a '{' that starts no repetition is a literal
                            i++;
                        }
                    }
                    case '}' -> {
                        out.append("\\}");
                        i++;
                    }
                    default -> {
                        out.append(c);
                        i++;
                    }
                }
            }
            return out.toString();
        }

        /**
         * Copies the escape at {@code i}, returning where it ends: {@code \Q…\E} and {@code \p{…}} whole;
         * an octal escape ({@code \12}) as the hex escape Java reads the same ({@code \1} would be a
         * backreference); {@code \v} as the one character it is in RE2 (a class in Java).
         */
        private int escape(int i) {
            if (i + 1 >= re.length()) {
                throw error("trailing backslash");
            }
            char d = re.charAt(i + 1);
            if (d == 'Q') { // literal text up to \E or the end, the same in both
                int e = re.indexOf("\\E", i + 2);
                int end = e < 0 ? re.length() : e + 2;
                out.append(re, i, end);
                return end;
            }
            if ((d == 'p' || d == 'P' || d == 'x') && i + 2 < re.length() && re.charAt(i + 2) == '{') {
                int close = re.indexOf('}', i + 3);
                if (close < 0) {
                    throw error("unterminated \\" + d + "{ at " + i);
                }
                if (d == 'x') {
                    out.append(re, i, close + 1);
                } else { // RE2 names scripts bare (\p{Greek}), Java with "Is"; categories take it too
                    String name = re.substring(i + 3, close);
                    boolean negated = name.startsWith("^");
                    out.append('\\').append(negated == (d == 'p') ? 'P' : 'p')
                            .append("{Is").append(negated ? name.substring(1) : name).append('}');
                }
                return close + 1;
            }
            if (d >= '0' && d <= '7') {
                int j = i + 1;
                int value = 0;
                while (j < re.length() && j < i + 4 && re.charAt(j) >= '0' && re.charAt(j) <= '7') {
                    value = value * 8 + (re.charAt(j) - '0');
                    j++;
                }
                if (d != '0' && j == i + 2) {
                    throw error("backreference \\" + d + " is not supported");
                }
                out.append(String.format("\\x{%x}", value));
                return j;
            }
            if (d == 'v') {
                out.append("\\x0B");
                return i + 2;
            }
            if (Character.isLetterOrDigit(d) && "afntrdDsSwWpPbBAzx".indexOf(d) < 0) {
                throw error("\\" + d + " is not supported");
            }
            out.append(re, i, i + 2);
            return i + 2;
        }

        private int charClass(int i) {
            int j = i + 1;
            out.append('[');
            if (j < re.length() && re.charAt(j) == '^') {
                out.append('^');
                j++;
            }
            if (j < re.length() && re.charAt(j) == ']') { // a leading ']' is a literal in RE2
                out.append("\\]");
                j++;
            }
            while (j < re.length() && re.charAt(j) != ']') {
                char ch = re.charAt(j);
                if (re.startsWith("[:", j)) {
                    int close = re.indexOf(":]", j + 2);
                    if (close < 0) {
                        throw error("unterminated POSIX class at " + j);
                    }
                    String name = re.substring(j + 2, close);
                    boolean negated = name.startsWith("^");
                    String cls = POSIX.get(negated ? name.substring(1) : name);
                    if (cls == null) {
                        throw error("unknown POSIX class [:" + name + ":]");
                    }
                    out.append(negated ? (cls.equals("\\w") ? "\\W" : "\\P" + cls.substring(2)) : cls);
                    j = close + 2;
                } else if (ch == '[' || ch == '&') { // literals in RE2, set operators in Java
                    out.append('\\').append(ch);
                    j++;
                } else if (ch == '\\') {
                    j = escape(j);
                } else {
                    out.append(ch);
                    j++;
                }
            }
            if (j >= re.length()) {
                throw error("missing closing ]");
            }
            out.append(']');
            return j + 1;
        }

        private int group(int i) {
            boolean pNamed = re.startsWith("(?P<", i);
            boolean named = pNamed || (re.startsWith("(?<", i) && i + 3 < re.length()
                    && re.charAt(i + 3) != '=' && re.charAt(i + 3) != '!');
            if (named) {
                int start = i + (pNamed ? 4 : 3);
                int close = re.indexOf('>', start);
                String name = close < 0 ? "" : re.substring(start, close);
                if (!name.matches("[A-Za-z0-9_]+")) {
                    throw error("invalid named capture at " + i);
                }
                groups++;
                if (names.putIfAbsent(name, groups) != null) {
                    throw error("duplicate capture group name " + name);
                }
                out.append('(');
                return close + 1;
            }
            if (!re.startsWith("(?", i)) {
                groups++;
                out.append('(');
                return i + 1;
            }
            int j = i + 2;
            while (j < re.length() && "imsU-".indexOf(re.charAt(j)) >= 0) {
                j++;
            }
            if (j >= re.length() || (re.charAt(j) != ')' && re.charAt(j) != ':')) {
                int shown = j + (re.startsWith("<", j) ? 2 : 1); // "(?<=", "(?<!"
                throw error("\"" + re.substring(i, Math.min(re.length(), shown))
                        + "\" is not RE2 syntax (RE2 has no lookaround, atomic groups or backreferences)");
            }
            if (re.substring(i + 2, j).indexOf('U') >= 0) {
                throw error("the U (ungreedy) flag is not supported");
            }
            out.append(re, i, j + 1);
            return j + 1;
        }

        private IllegalArgumentException error(String what) {
            return new IllegalArgumentException("invalid regular expression \"" + re + "\": " + what);
        }
    }
}
