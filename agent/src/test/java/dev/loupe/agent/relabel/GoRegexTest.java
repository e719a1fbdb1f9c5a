package dev.loupe.agent.relabel;

import org.junit.jupiter.api.Test;

import java.util.regex.MatchResult;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** RE2 meaning where java.util.regex would read the same text differently, and Go's template expansion. */
class GoRegexTest {
    private static boolean matches(String re, String s) {
        return GoRegex.compile(re).matches(s);
    }

    private static String expand(String re, String value, String template) {
        GoRegex r = GoRegex.compile(re);
        MatchResult m = r.match(value);
        assertEquals(true, m != null, re + " should match " + value);
        return r.expand(template, m);
    }

    private static String error(String re) {
        return assertThrows(IllegalArgumentException.class, () -> GoRegex.compile(re)).getMessage();
    }

    @Test
    void anchoredAtBothEnds() {
        assertEquals(true, matches("foo", "foo"));
        assertEquals(false, matches("foo", "xfoo"));
        assertEquals(false, matches("foo", "foox"));
        assertEquals(false, matches("f|o", "foo"), "the alternation is inside the anchors");
        assertEquals(true, matches("f|o", "o"));
    }

    @Test
    void dotMatchesNewlinesAsInPrometheus3() {
        assertEquals(true, matches("foo.bar", "foo\nbar"));
        assertEquals(true, matches(".*", "a\r\nb\u2028c"));
        assertEquals(false, matches("(?-s:foo.bar)", "foo\nbar"), "unless turned off");
    }

    @Test
    void dollarIsTheEndOfTheText() {
        assertEquals(false, matches("foo$", "foo\n"), "Java's $ would match before a final newline");
        assertEquals(true, matches("foo$", "foo"));
        assertEquals(true, matches("(?m)a$\nb", "a\nb"), "with (?m), $ is the end of a line");
    }

    @Test
    void syntaxJavaReadsDifferently() {
        assertEquals(true, matches("[[:digit:]]+", "123"));
        assertEquals(false, matches("[[:digit:]]+", "12a"));
        assertEquals(true, matches("[[:^digit:][:space:]]+", "ab c"));
        assertEquals(true, matches("[[:word:]]+", "a_1"));
        assertEquals(true, matches("[[]+", "[["), "'[' in a class is a literal");
        assertEquals(true, matches("[a&&b]+", "a&b"), "&& in a class is two literals");
        assertEquals(true, matches("[]a]+", "]a]"), "a leading ']' is a literal");
        assertEquals(true, matches("a{b}", "a{b}"), "a '{' that starts no repetition is a literal");
        assertEquals(true, matches("a{2}", "aa"));
        assertEquals(true, matches("a{2,}b{1,2}", "aaabb"));
        assertEquals(true, matches("\\101\\0", "A\0"), "octal escapes");
        assertEquals(true, matches("\\v", "\u000B"));
        assertEquals(false, matches("\\v", "\n"), "RE2's \\v is one character, Java's a class");
        assertEquals(true, matches("(?i)é", "É"), "(?i) folds Unicode case");
        assertEquals(true, matches("\\p{Greek}+", "αβ"));
        assertEquals(false, matches("\\p{Greek}+", "ab"));
        assertEquals(true, matches("\\p{^Greek}\\P{Greek}\\pL\\p{Lu}", "abcD"));
        assertEquals(false, matches("\\P{^Greek}", "a"));
        assertEquals(true, matches("\\x{41}\\x42", "AB"));
        assertEquals(true, matches("\\Q.{[\\E", ".{["));
        assertEquals(true, matches("[\\d\\-]+", "1-2"));
    }

    @Test
    void syntaxRe2RefusesOrJavaWouldMisread() {
        assertEquals("invalid regular expression \"a(?=b)\": \"(?=\" is not RE2 syntax (RE2 has no lookaround, atomic"
                + " groups or backreferences)", error("a(?=b)"));
        assertEquals("invalid regular expression \"(?<!a)b\": \"(?<!\" is not RE2 syntax (RE2 has no lookaround, atomic"
                + " groups or backreferences)", error("(?<!a)b"));
        assertEquals("invalid regular expression \"(?>a)\": \"(?>\" is not RE2 syntax (RE2 has no lookaround, atomic"
                + " groups or backreferences)", error("(?>a)"));
        assertEquals("invalid regular expression \"(a)\\1\": backreference \\1 is not supported", error("(a)\\1"));
        assertEquals("invalid regular expression \"(?U)a*\": the U (ungreedy) flag is not supported", error("(?U)a*"));
        assertEquals("invalid regular expression \"\\C\": \\C is not supported", error("\\C"));
        assertEquals("invalid regular expression \"\\R\": \\R is not supported", error("\\R"));
        assertEquals("invalid regular expression \"[[:alfa:]]\": unknown POSIX class [:alfa:]", error("[[:alfa:]]"));
        assertEquals("invalid regular expression \"[ab\": missing closing ]", error("[ab"));
        assertEquals("invalid regular expression \"a\\\": trailing backslash", error("a\\"));
        assertEquals("invalid regular expression \"(?P<a>x)(?P<a>y)\": duplicate capture group name a", error("(?P<a>x)(?P<a>y)"));
        assertEquals("invalid regular expression \"(?P<a-b>x)\": invalid named capture at 0", error("(?P<a-b>x)"));
        assertEquals("invalid regular expression \"a)\": Unmatched closing ')'", error("a)"));
    }

    @Test
    void expansionFollowsGo() {
        String re = "(?P<host>[^:]+):(?<port>\\d+)";
        assertEquals("web:80", expand(re, "web:80", "$1:$2"));
        assertEquals("web/80", expand(re, "web:80", "${host}/${port}"));
        assertEquals("web", expand(re, "web:80", "$host"), "(?P<name>) and (?<name>) both name groups");
        assertEquals("", expand(re, "web:80", "$1x"), "$1x is the group named 1x: none");
        assertEquals("webx", expand(re, "web:80", "${1}x"));
        assertEquals("$1", expand(re, "web:80", "$$1"));
        assertEquals("cost $", expand(re, "web:80", "cost $"), "a '$' starting no reference stays");
        assertEquals("a${b", expand(re, "web:80", "a${b"), "an unclosed brace is text");
        assertEquals("${-}", expand(re, "web:80", "${-}"));
        assertEquals("", expand(re, "web:80", "$9"), "a group the regex does not have is empty");
        assertEquals("", expand(re, "web:80", "$01"), "a leading zero is no number (and no such name)");
        assertEquals("web:80", expand(re, "web:80", "$0"));
        assertEquals("", expand("(a)|(b)", "b", "$1"), "an unmatched group is empty");
        assertEquals("b", expand("(a)|(b)", "b", "$2"));
        assertEquals("é-web", expand("(?P<h>.+)", "web", "é-$h"));
        assertEquals("-", expand("(x)", "x", "${名}-$名x"), "a reference's name may have letters of any script");
        assertEquals("invalid regular expression \"(?P<名>x)\": invalid named capture at 0", error("(?P<名>x)"),
                "a group's name is ASCII");
    }

    @Test
    void groupNumbersCountNamedAndUnnamedGroupsInOrder() {
        String re = "(a)(?:b)(?P<c>c)(d)";
        assertEquals("a|c|d|c", expand(re, "abcd", "$1|$2|$3|$c"));
    }

    /**
     * Pattern, input, template → what Go's regexp (1.19) gives for {@code ^(?s:pattern)$}:
     * "false" for no match, else the expansion. Recorded from a Go program run over these rows.
     */
    @Test
    void agreesWithGo() {
        String[][] rows = {
                {"foo", "foo", "$0", "foo"},
                {"f|o", "foo", "x", "false"},
                {"foo.bar", "foo\nbar", "$0", "foo\nbar"},
                {"foo$", "foo\n", "x", "false"},
                {"(?m)a$\\nb", "a\nb", "x", "x"},
                {"[[:digit:]]+", "123", "$0", "123"},
                {"[[:^digit:][:space:]]+", "ab c", "$0", "ab c"},
                {"[[]+", "[[", "$0", "[["},
                {"[a&&b]+", "a&b", "$0", "a&b"},
                {"[]a]+", "]a]", "$0", "]a]"},
                {"a{b}", "a{b}", "$0", "a{b}"},
                {"a{2,}b{1,2}", "aaabb", "$0", "aaabb"},
                {"a{,3}", "a{,3}", "$0", "a{,3}"},
                {"x{", "x{", "$0", "x{"},
                {"\\101", "A", "$0", "A"},
                {"(?i)é", "É", "$0", "É"},
                {"\\p{Greek}+", "αβ", "$0", "αβ"},
                {"\\p{^Greek}\\P{Greek}\\pL\\p{Lu}", "abcD", "$0", "abcD"},
                {"\\Q.{[\\E", ".{[", "$0", ".{["},
                {"(?P<host>[^:]+):(?P<port>\\d+)", "web:80",
                        "$1x|${1}x|$$1|cost $|a${b|${-}|$9|$01|$0|$host/${port}", "|webx|$1|cost $|a${b|${-}|||web:80|web/80"},
                {"(a)|(b)", "b", "[$1][$2]", "[][b]"},
                {"(x)", "x", "${名}-$名x", "-"},
                {"(a)(?:b)(?P<c>c)(d)", "abcd", "$1|$2|$3|$c", "a|c|d|c"},
                {"\\v", "\n", "x", "false"},
        };
        for (String[] r : rows) {
            GoRegex re = GoRegex.compile(r[0]);
            MatchResult m = re.match(r[1]);
            String got = m == null ? "false" : re.expand(r[2], m);
            assertEquals(r[3], got, r[0] + " on " + r[1]);
        }
        assertEquals(24, rows.length);
    }
}
