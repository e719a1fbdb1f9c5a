package dev.loupe.unwinder.fuzz;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Every fuzz target of the project, in one list: the suite's short Jazzer runs and regression replays
 * ({@code FuzzTargetsTest} in each module) and {@code ./loupe fuzz} run exactly these. To add a target, write a
 * class with Jazzer's {@code public static void fuzzerTestOneInput(byte[] data)} in a module's test sources,
 * add one line here, and put at least one seed in {@code <module>/src/test/resources/fuzz/<SimpleName>/}.
 * A target may also have {@code public static void writeSeeds(Path dir)}, which makes its seeds (e.g. sections of a
 * freshly compiled program) for {@link FuzzSuite#main} to keep there, and Jazzer's {@code fuzzerInitialize()}.
 *
 * <p>The module is the target's package: {@code dev.loupe.unwinder.*} runs in unwinder, {@code dev.loupe.agent.*}
 * in agent. {@code -Dloupe.fuzz.targets=A,B} (simple or full class names) narrows every run to those.
 */
public final class FuzzTargets {
    /**
     * A target and its Jazzer options.
     *
     * @param className  the class with {@code fuzzerTestOneInput}
     * @param maxLen     libFuzzer's {@code -max_len}: the longest input tried (longer seeds are cut to it)
     * @param jazzerArgs more arguments for Jazzer (libFuzzer's -flags), or names of more hooks to disable
     *                   ({@code com.code_intelligence.jazzer.sanitizers.*})
     */
    public record Target(String className, int maxLen, List<String> jazzerArgs) {
        public Target {
            jazzerArgs = List.copyOf(jazzerArgs);
        }

        public String simpleName() {
            return className.substring(className.lastIndexOf('.') + 1);
        }

        /** {@code unwinder} or {@code agent}: the module whose tests run it (from the package). */
        public String module() {
            String rest = className.substring("dev.loupe.".length());
            return rest.substring(0, rest.indexOf('.'));
        }

        /** The kept inputs the suite replays: {@code src/test/resources/fuzz/<SimpleName>} under the module. */
        public Path regressionDir(Path moduleDir) {
            return moduleDir.resolve("src/test/resources/fuzz").resolve(simpleName());
        }

        /** Jazzer's arguments: {@code --disabled_hooks} ({@link #OFF_HOOKS} and the target's own) and the rest. */
        public List<String> arguments() {
            List<String> hooks = new java.util.ArrayList<>(OFF_HOOKS);
            List<String> rest = new java.util.ArrayList<>();
            for (String a : jazzerArgs) {
                (a.startsWith("com.code_intelligence.jazzer.sanitizers.") ? hooks : rest).add(a);
            }
            rest.add(0, "--disabled_hooks=" + String.join(":", hooks));
            return rest;
        }

        @Override
        public String toString() {
            return simpleName();
        }
    }

    /**
     * Jazzer's bug detectors for injections into what none of these readers reaches (SQL, LDAP, JNDI, scripts,
     * deserialization, OS commands, XML, templates, reflection, sun.misc.Unsafe): off, which takes ~10 s off each
     * child's start. On stay the file path traversal and regex detectors, and the comparison hooks that guide.
     */
    static final List<String> OFF_HOOKS = java.util.stream.Stream.of("BigDecimal", "ClojureLangHooks", "Deserialization",
            "ExpressionLanguageInjection", "LdapInjection", "NamingContextLookup", "OsCommandInjection", "ReflectiveCall",
            "ScriptEngineInjection", "ServerSideRequestForgery", "SqlInjection", "TemplateInjection", "UnsafeSanitizer",
            "XPathInjection", "XmlParserSsrfGuidance").map(h -> "com.code_intelligence.jazzer.sanitizers." + h).toList();

    /**
     * The jars a Jazzer child gets besides the project's class directories (jar file names starting so): Jazzer
     * scans its classpath at start, and agent's test libraries (Kafka, WireMock, gRPC) made that ~10 s. A target
     * whose reader needs another library adds its jar here.
     */
    static final List<String> CHILD_JARS = List.of("loupe-", "jazzer", "caffeine", "jspecify", "error_prone_annotations", "zstd-jni");

    /** Java's regex compiler reached with fuzzer bytes is what a regex reader is for: not an injection there. */
    private static final String NO_REGEX_INJECTION = "com.code_intelligence.jazzer.sanitizers.RegexInjection";

    /**
     * Inputs up to -max_len from the start: libFuzzer otherwise grows its length limit slowly from the longest seed
     * (a perf map script stayed under 248 bytes for a whole 76 s run).
     */
    private static final String GROW_AT_ONCE = "-len_control=0";

    /** The list. One line a target; the HotSpot readers' targets go here too ({@code dev.loupe.unwinder.hotspot.*}). */
    public static final List<Target> ALL = List.of(
            target("dev.loupe.unwinder.ehframe.CfiFuzzTarget", 65536),
            target("dev.loupe.unwinder.elf.ElfFileFuzzTarget", 65536),
            target("dev.loupe.unwinder.hotspot.HotSpotFuzzTarget", 65536),
            target("dev.loupe.unwinder.hotspot.CompressedLineNumbersFuzzTarget", 4096),
            target("dev.loupe.unwinder.golang.GoPclntabFuzzTarget", 32768),
            target("dev.loupe.unwinder.dwarf.DebugLineFuzzTarget", 16384),
            target("dev.loupe.unwinder.dwarf.DwarfPackageFuzzTarget", 4096),
            target("dev.loupe.unwinder.dwarf.DebugInfoFuzzTarget", 32768),
            target("dev.loupe.unwinder.golang.GoRuntimeInfoFuzzTarget", 8192),
            target("dev.loupe.unwinder.golang.GoBinaryFuzzTarget", 65536),
            target("dev.loupe.unwinder.golang.X86DecoderFuzzTarget", 4096),
            target("dev.loupe.unwinder.perfmap.PerfMapFuzzTarget", 16384, GROW_AT_ONCE),
            target("dev.loupe.unwinder.proc.ProcFuzzTarget", 16384),
            target("dev.loupe.unwinder.python.CodeObjectFuzzTarget", 8192),
            target("dev.loupe.unwinder.v8.V8ObjectFuzzTarget", 1024),
            target("dev.loupe.agent.labels.CgroupFuzzTarget", 8192),
            target("dev.loupe.agent.relabel.RelabelFuzzTarget", 4096, NO_REGEX_INJECTION),
            target("dev.loupe.agent.jvm.JvmProcessFuzzTarget", 65600));

    private FuzzTargets() {}

    private static Target target(String className, int maxLen, String... jazzerArgs) {
        return new Target(className, maxLen, List.of(jazzerArgs));
    }

    /** The targets of one module, narrowed by {@code -Dloupe.fuzz.targets} if it is set. */
    public static List<Target> of(String module) {
        String only = System.getProperty("loupe.fuzz.targets", "").strip();
        Set<String> wanted = only.isEmpty() ? Set.of()
                : Arrays.stream(only.split(",")).map(String::strip).filter(s -> !s.isEmpty()).collect(Collectors.toSet());
        return ALL.stream()
                .filter(t -> t.module().equals(module))
                .filter(t -> wanted.isEmpty() || wanted.contains(t.simpleName()) || wanted.contains(t.className()))
                .toList();
    }
}
