package dev.loupe.unwinder.hotspot;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The code cache, method names and inlined methods of real JDK 25, 17 and 11 JVMs, checked against the JVMs' own
 * jcmd output and the inlining their CompileCommands order.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HotSpotJvmTest {
    static final Path PROC = Path.of("/proc");

    private TargetJvm jdk25;
    private TargetJvm jdk17;
    private TargetJvm jdk11;
    private TargetJvm jdk21;
    private TargetJvm jdk8;

    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        jdk25 = TargetJvm.start(TargetJvm.JDK25, dir.resolve("25"), 300_000);
        jdk17 = TargetJvm.start(TargetJvm.JDK17, dir.resolve("17"), 300_000);
        jdk11 = TargetJvm.start(TargetJvm.JDK11, dir.resolve("11"), 300_000);
        jdk21 = TargetJvm.start(TargetJvm.SID, TargetJvm.JDK21, dir, 300_000);
        jdk8 = TargetJvm.start(TargetJvm.SID, TargetJvm.JDK8, dir, 300_000);
    }

    @AfterAll
    void stop() throws Exception {
        if (jdk25 != null) {
            jdk25.close();
        }
        if (jdk17 != null) {
            jdk17.close();
        }
        for (TargetJvm t : new TargetJvm[] {jdk11, jdk21, jdk8}) {
            if (t != null) {
                t.close();
            }
        }
    }

    @Test
    void jdk25() throws Exception {
        check(jdk25, "25");
    }

    @Test
    void jdk17() throws Exception {
        check(jdk17, "17");
    }

    @Test
    void jdk11() throws Exception {
        check(jdk11, "11");
    }

    /** Debian unstable's JDK 21, in its own root file system (as in a container). */
    @Test
    void jdk21() throws Exception {
        check(jdk21, "21");
    }

    /**
     * Debian unstable's JDK 8 (8u504), in its own root file system: one code heap ({@code CodeCache::_heap}), the
     * header-relative debug information of an nmethod, HotSpot's own version 25.x. Its jcmd has no Compiler.codelist
     * (JDK 9+), so the blobs are checked by their names and inlining alone.
     */
    @Test
    void jdk8() throws Exception {
        check(jdk8, "8");
    }

    /** One line of {@code jcmd PID Compiler.codelist}: "id level state name [header, code begin - code end]". */
    record Listed(String method, long header, long codeBegin, long codeEnd) {}

    static final Pattern CODELIST = Pattern.compile("^\\d+ -?\\d+ \\d+ (\\S+) \\[0x([0-9a-f]+), 0x([0-9a-f]+) - 0x([0-9a-f]+)\\]");

    static List<Listed> codelist(TargetJvm t) throws Exception {
        List<Listed> out = new ArrayList<>();
        for (String line : t.tool("jcmd", Integer.toString(t.pid()), "Compiler.codelist").split("\n")) {
            Matcher m = CODELIST.matcher(line.trim());
            if (m.find()) {
                String name = m.group(1);
                int paren = name.indexOf('(');
                out.add(new Listed(paren < 0 ? name : name.substring(0, paren), Long.parseUnsignedLong(m.group(2), 16), Long.parseUnsignedLong(m.group(3), 16),
                        Long.parseUnsignedLong(m.group(4), 16)));
            }
        }
        return out;
    }

    private void check(TargetJvm t, String version) throws Exception {
        long o0 = System.nanoTime();
        try (HotSpotJvm jvm = HotSpotJvm.open(PROC, t.pid()).orElseThrow()) {
            System.out.printf("JDK %s: open %.1f ms, %d VMStructs fields, %d types%n", version, (System.nanoTime() - o0) / 1e6,
                    jvm.structs().fields().size(), jvm.structs().types().size());
            assertTrue(jvm.vmVersion().startsWith(version.equals("8") ? "25." : version), jvm.vmVersion()); // 8's HotSpot is 25.x
            // jcmd's list before our read: an nmethod it lists before and after (same code range) lived through the read.
            List<Listed> listedBefore = version.equals("8") ? List.of() : codelist(t);
            CodeCache cc = null;
            long best = Long.MAX_VALUE;
            for (int i = 0; i < 5; i++) { // warm, then the best of a few
                long t0 = System.nanoTime();
                cc = jvm.codeCache();
                best = Math.min(best, System.nanoTime() - t0);
            }
            Map<CodeBlob.Kind, Integer> counts = new EnumMap<>(CodeBlob.Kind.class);
            cc.blobs().forEach(b -> counts.merge(b.kind(), 1, Integer::sum));
            long heapBytes = cc.heaps().stream().mapToLong(r -> r.high() - r.low()).sum();
            System.out.printf("JDK %s (%s): %d heaps, %d KiB committed, %d blobs %s, %d skipped, scan %.2f ms in %d preads%n",
                    version, jvm.vmVersion(), cc.heaps().size(), heapBytes >> 10, cc.blobs().size(), counts,
                    jvm.lastSkippedBlobs(), best / 1e6, jvm.lastPreads());

            jvm.lastSkipReasons().forEach(System.out::println);
            System.out.println("no frame size: " + cc.blobs().stream().filter(b -> b.frameSizeBytes() < 0)
                    .map(b -> b.kind() + " " + b.name()).toList());
            assertEquals(0, jvm.lastSkippedBlobs(), jvm.lastSkipReasons().toString());
            assertEquals(version.equals("8") ? 1 : 3, cc.heaps().size(), "JDK 8 has one code heap, later JDKs three by default");
            assertEquals(1, counts.getOrDefault(CodeBlob.Kind.INTERPRETER, 0), counts.toString());
            if (version.equals("8")) {
                // JDK 8's libjvm exports neither a blob kind nor vtable symbols (only ~500 dynamic symbols): blobs
                // other than nmethods and the interpreter (told by name) are OTHER. The unwind table needs only their
                // frame sizes, and stubs keep their own names.
                assertEquals(0, counts.getOrDefault(CodeBlob.Kind.RUNTIME_STUB, 0) + counts.getOrDefault(CodeBlob.Kind.ADAPTER, 0));
                assertTrue(counts.getOrDefault(CodeBlob.Kind.OTHER, 0) >= 10, counts.toString());
            } else {
                assertTrue(counts.getOrDefault(CodeBlob.Kind.RUNTIME_STUB, 0) >= 3, counts.toString());
                assertTrue(counts.getOrDefault(CodeBlob.Kind.ADAPTER, 0) >= 1, counts.toString());
            }
            assertTrue(counts.getOrDefault(CodeBlob.Kind.NMETHOD, 0) >= 10, counts.toString());
            for (CodeBlob b : cc.blobs()) {
                assertTrue(b.start() <= b.end(), b.toString());
                assertTrue(cc.heaps().stream().anyMatch(r -> r.low() <= b.start() && b.end() <= r.high()), b.toString());
                assertTrue(b.frameSizeBytes() == -1 || b.frameSizeBytes() % 8 == 0, b.toString());
                // Compiled Java methods have a frame (return address and saved rbp at least); "native nmethod"
                // wrappers of method handle intrinsics may have none.
                assertTrue(b.kind() != CodeBlob.Kind.NMETHOD || !b.name().equals("nmethod") || b.frameSizeBytes() >= 16, b.toString());
                if (b.frameCompleteAddress() != -1) {
                    assertTrue(b.start() <= b.frameCompleteAddress() && b.frameCompleteAddress() <= b.end(), b.toString());
                }
                assertEquals(b.kind() == CodeBlob.Kind.NMETHOD, b.method() != 0, b.toString());
            }

            int spinA = 0;
            if (version.equals("8")) {
                // JDK 8's jcmd has no Compiler.codelist (JDK 9+): every nmethod must name its method.
                int named = 0;
                for (CodeBlob b : cc.blobs()) {
                    if (b.kind() == CodeBlob.Kind.NMETHOD) {
                        String name = jvm.methodName(b.method()).orElseThrow(() -> new AssertionError("no name for " + b));
                        named++;
                        spinA += checkSpinA(name, b);
                    }
                }
                System.out.printf("JDK 8: %d nmethods, every one named; spinA %d%n", named, spinA);
            } else {
                // Every nmethod jcmd lists (it lists those alive) is one we found, same code range, same method name.
                java.util.Set<List<Long>> before = new java.util.HashSet<>();
                listedBefore.forEach(l -> before.add(List.of(l.codeBegin(), l.codeEnd())));
                List<Listed> listed = codelist(t).stream().filter(l -> before.contains(List.of(l.codeBegin(), l.codeEnd()))).toList();
                Map<Long, CodeBlob> byStart = new java.util.HashMap<>();
                cc.blobs().forEach(b -> byStart.put(b.start(), b));
                int matched = 0;
                for (Listed l : listed) {
                    CodeBlob b = byStart.get(l.codeBegin());
                    if (b == null) {
                        continue; // a blob our read skipped (torn while read): checked by count below
                    }
                    matched++;
                    assertEquals(CodeBlob.Kind.NMETHOD, b.kind(), b.toString());
                    assertEquals(l.codeEnd(), b.end(), l + " vs " + b);
                    String name = jvm.methodName(b.method()).orElseThrow(() -> new AssertionError("no name for " + b));
                    // JDK 11's VM-anonymous classes (lambdas, lambda forms) have no address in their Symbol; HotSpot's
                    // external name appends the Klass*, "/0x...", which we leave out (JDK 15+ hidden classes carry it
                    // in the Symbol).
                    String expected = version.equals("11") ? l.method().replaceFirst("/0x[0-9a-f]+\\.([^.]+)$", ".$1") : l.method();
                    assertEquals(expected, name, b.toString());
                    spinA += checkSpinA(name, b);
                }
                System.out.printf("JDK %s: jcmd lists %d nmethods before and after our read, %d match ours by [start, end) and name; spinA %d%n",
                        version, listed.size(), matched, spinA);
                assertTrue(listed.size() >= 10);
                assertTrue(matched >= listed.size() * 9 / 10, matched + " of " + listed.size());
            }
            assertTrue(spinA >= 1, "no nmethod of HotSpotTarget.spinA (that jcmd also lists, where it lists)");
            boolean spinB = false;
            for (CodeBlob b : cc.blobs()) {
                spinB |= b.kind() == CodeBlob.Kind.NMETHOD && jvm.methodName(b.method()).orElse("").equals("HotSpotTarget.spinB");
            }
            assertTrue(spinB, "no nmethod named HotSpotTarget.spinB");
            checkInlining(jvm, cc, version);

            checkStubs(jvm, cc, version);

            // Pointers that are not Methods.
            assertTrue(jvm.methodName(0).isEmpty());
            assertTrue(jvm.methodName(8).isEmpty());
            CodeBlob interp = cc.blobs().stream().filter(b -> b.kind() == CodeBlob.Kind.INTERPRETER).findFirst().orElseThrow();
            assertTrue(jvm.methodName(interp.start()).isEmpty()); // code, not metadata
            assertTrue(jvm.methodName(0x10000).isEmpty());        // unmapped
        }
    }

    /**
     * HotSpot's generated stubs by name (StubCodeDesc::_list, found by .symtab): the call stub holds the call stub's
     * return address, arraycopy stubs are among them, and each lies in a blob of the code cache that is not a method's. JDK 8's libjvm (Debian
     * sid's) has no .symtab: no stubs, so its stubs keep their blob's name.
     */
    private static void checkStubs(HotSpotJvm jvm, CodeCache cc, String version) throws Exception {
        checkCodelets(jvm, cc, version);
        List<HotSpotJvm.Stub> stubs = jvm.stubs();
        System.out.printf("JDK %s: %d named stubs, e.g. %s%n", version, stubs.size(), stubs.stream().limit(4).map(HotSpotJvm.Stub::name).toList());
        if (version.equals("8")) {
            assertEquals(List.of(), stubs);
            return;
        }
        long ret = jvm.callStubReturnAddress();
        assertTrue(stubs.stream().anyMatch(st -> st.name().equals("StubRoutines::call_stub") && st.begin() < ret && ret < st.end()),
                "the call stub holds its return address: " + stubs);
        // (named ..._avx3 where the JVM generated the AVX-512 variant: JDK 17 and 21 on this machine)
        assertTrue(stubs.stream().anyMatch(st -> st.name().matches("StubRoutines::jlong_disjoint_arraycopy(_avx3)?")), stubs.toString());
        for (HotSpotJvm.Stub st : stubs) {
            assertTrue(cc.blobs().stream().anyMatch(b -> b.method() == 0 && b.start() <= st.begin() && st.end() <= b.end()),
                    st + " lies in a stub blob");
        }
        // The arraycopy stubs begin with enter() (so does the call stub, an RBP frame too): the table steps them by RBP.
        List<HotSpotJvm.Stub> framed = jvm.framedStubs(stubs);
        System.out.printf("JDK %s: %d stubs begin with enter()%n", version, framed.size());
        assertTrue(framed.stream().anyMatch(st -> st.name().matches("StubRoutines::jlong_disjoint_arraycopy(_avx3)?")), framed.toString());
        assertTrue(framed.size() < stubs.size(), "not every stub: " + framed.size() + " of " + stubs.size()); // data, fences...
        // The fill stubs reach enter() after moving a register on JDK 21 and 25 (at their first byte before), and the generic
        // arraycopy after a 5-byte jump to its failure exit: every one of them is framed.
        for (HotSpotJvm.Stub st : stubs) {
            if (st.name().matches("StubRoutines::(arrayof_)?j(byte|short|int)_fill|StubRoutines::generic_arraycopy")) {
                HotSpotJvm.Stub f = framed.stream().filter(x -> x.begin() == st.begin()).findFirst().orElse(null);
                assertTrue(f != null, st + " is framed: " + framed);
                assertEquals(st.name().endsWith("generic_arraycopy") ? List.of(5, 5) : List.of(0, List.of("21", "25").contains(version) ? 3 : 0),
                        List.of(f.entry(), f.enter()), f.toString());
            }
        }
    }

    /**
     * The interpreter's codelets: one after another inside the blob named "Interpreter", each named, among them the
     * entry of ordinary methods and one per bytecode (invokevirtual, and the rest).
     */
    private static void checkCodelets(HotSpotJvm jvm, CodeCache cc, String version) throws Exception {
        List<HotSpotJvm.Codelet> codelets = jvm.codelets();
        System.out.printf("JDK %s: %d interpreter codelets, e.g. %s%n", version, codelets.size(),
                codelets.stream().limit(4).map(HotSpotJvm.Codelet::description).toList());
        CodeBlob interpreter = cc.blobs().stream().filter(b -> b.kind() == CodeBlob.Kind.INTERPRETER).findFirst().orElseThrow();
        long at = codelets.getFirst().begin();
        for (HotSpotJvm.Codelet c : codelets) {
            assertEquals(at, c.begin(), "codelets follow one another: " + c);
            assertTrue(interpreter.address() <= c.begin() && c.end() <= interpreter.end(), c + " lies in " + interpreter);
            at = c.end();
        }
        java.util.Set<String> names = new java.util.HashSet<>(codelets.stream().map(HotSpotJvm.Codelet::description).toList());
        for (String n : List.of("method entry point (kind = zerolocals)", "invokevirtual", "invokestatic", "iload", "return")) {
            assertTrue(names.contains(n), "a codelet '" + n + "': " + names);
        }
    }

    /** 1 for an nmethod of spinA, whose frame must be a compiled one (size, frame-complete point); else 0. */
    private static int checkSpinA(String name, CodeBlob b) {
        if (!name.equals("HotSpotTarget.spinA")) {
            return 0;
        }
        assertTrue(b.frameSizeBytes() > 0 && b.frameSizeBytes() % 16 == 0, b.toString());
        assertTrue(b.start() < b.frameCompleteAddress() && b.frameCompleteAddress() < b.end(), b.toString());
        return 1;
    }

    /**
     * Every pc of every nmethod of {@code outer} decodes to a chain ending in outer, and some pc (its call to spinC)
     * to mid, inner, outer: the two methods the target's CompileCommands inline into it. spinC, never inlined, is in
     * no chain; spinA's nmethods, which call nothing, stand for spinA alone.
     */
    private void checkInlining(HotSpotJvm jvm, CodeCache cc, String version) throws Exception {
        assertTrue(jvm.inliningUnavailable().isEmpty(), jvm.inliningUnavailable().toString());
        java.util.Set<List<String>> outerChains = new java.util.HashSet<>();
        java.util.Set<List<String>> spinAChains = new java.util.HashSet<>();
        int outer = 0;
        int undecoded = 0;
        int pcs = 0;
        for (CodeBlob b : cc.blobs()) {
            String name = b.kind() == CodeBlob.Kind.NMETHOD ? jvm.methodName(b.method()).orElse("") : "";
            if (!name.equals("HotSpotTarget.outer") && !name.equals("HotSpotTarget.spinA")) {
                continue;
            }
            outer += name.equals("HotSpotTarget.outer") ? 1 : 0;
            for (long pc = b.start(); pc < b.end(); pc++) {
                pcs++;
                long[] chain = jvm.scopeMethods(b, pc);
                if (chain == null) {
                    undecoded++;
                    continue;
                }
                List<String> names = new ArrayList<>();
                for (long m : chain) {
                    names.add(jvm.methodName(m).orElse("?"));
                }
                (name.equals("HotSpotTarget.outer") ? outerChains : spinAChains).add(names);
            }
        }
        System.out.printf("JDK %s inlining: %d nmethods of outer; chains %s; spinA %s; %d of %d pcs undecoded%n",
                version, outer, outerChains, spinAChains, undecoded, pcs);
        assertTrue(outer >= 1, "no nmethod of HotSpotTarget.outer");
        assertEquals(0, undecoded, "pcs whose debug information did not decode");
        assertTrue(outerChains.contains(List.of("HotSpotTarget.mid", "HotSpotTarget.inner", "HotSpotTarget.outer")),
                outerChains.toString());
        for (List<String> c : outerChains) {
            assertEquals("HotSpotTarget.outer", c.getLast(), c.toString());
            assertFalse(c.contains("HotSpotTarget.spinC"), c.toString());
        }
        assertEquals(java.util.Set.of(List.of("HotSpotTarget.spinA")), spinAChains);
    }
}
