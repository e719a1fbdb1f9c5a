package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.lines.SourceLine;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.RuntimeFrame;
import dev.loupe.unwinder.runtime.RuntimeProcess;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.classfile.Attributes;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassModel;
import java.lang.classfile.MethodModel;
import java.lang.classfile.attribute.CodeAttribute;
import java.lang.classfile.attribute.LineNumberInfo;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Java source lines (issue 28) on real JDK 25 and 17 JVMs: every bci of every compiled method of the target gets the
 * line its class file's LineNumberTable gives (read here with the JDK's ClassFile API, as ground truth), in
 * "HotSpotTarget.java"; and each pc of {@code outer}'s compiled code where {@code inner} and {@code mid} are inlined
 * shows all three at their own statements' lines, counted in the source text.
 */
class JavaSourceLinesTest {
    @TempDir
    Path dir;

    @ParameterizedTest(name = "JDK {0}")
    @ValueSource(strings = {"25", "17"})
    void everyBciOfCompiledMethodsHasItsClassFilesLine(String jdk) throws Exception {
        Path home = jdk.equals("25") ? TargetJvm.JDK25 : TargetJvm.JDK17;
        try (TargetJvm target = TargetJvm.start(home, dir, 300_000);
             HotSpotJvm jvm = HotSpotJvm.open(HotSpotJvmTest.PROC, target.pid()).orElseThrow()) {
            ClassModel cls = ClassFile.of().parse(Files.readAllBytes(dir.resolve("HotSpotTarget.class")));
            Map<String, MethodModel> byName = new HashMap<>();
            for (MethodModel m : cls.methods()) {
                byName.put("HotSpotTarget." + m.methodName().stringValue(), m);
            }
            int methods = 0;
            int bcis = 0;
            for (CodeBlob b : jvm.codeCache().blobs()) {
                String name = b.kind() == CodeBlob.Kind.NMETHOD ? jvm.methodName(b.method()).orElse("") : "";
                MethodModel m = byName.get(name);
                if (m == null) {
                    continue;
                }
                CodeAttribute code = m.findAttribute(Attributes.code()).orElseThrow();
                List<LineNumberInfo> table = code.findAttribute(Attributes.lineNumberTable()).orElseThrow().lineNumbers();
                methods++;
                for (int bci = 0; bci < code.codeLength(); bci++) {
                    MethodLines.Position p = jvm.position(b.method(), bci);
                    assertEquals("HotSpotTarget.java", p.file(), name);
                    assertEquals(classFileLine(table, bci), p.line(), name + " bci " + bci);
                    bcis++;
                }
                assertEquals(0, jvm.position(b.method(), code.codeLength()).line(), "past the method's code: no line");
                assertEquals(classFileLine(table, 0), jvm.position(b.method(), -1).line(), "the synchronization entry is bci 0's");
            }
            System.out.printf("JDK %s: %d compiled methods, %d bcis, each at its class file's line%n", jdk, methods, bcis);
            assertTrue(methods >= 4, "spinA, spinB, spinC, outer (and main's OSR code) are compiled: " + methods);
        }
    }

    /** The JVMS's reading: the entry at the bci, else the one with the greatest start below it. */
    static int classFileLine(List<LineNumberInfo> table, int bci) {
        int best = -1;
        int line = 0;
        for (LineNumberInfo e : table) {
            if (e.startPc() == bci) {
                return e.lineNumber();
            }
            if (e.startPc() < bci && e.startPc() >= best) {
                best = e.startPc();
                line = e.lineNumber();
            }
        }
        return line;
    }

    @ParameterizedTest(name = "JDK {0}")
    @ValueSource(strings = {"25", "17"})
    void inlinedMethodsShowTheirOwnLines(String jdk) throws Exception {
        Path home = jdk.equals("25") ? TargetJvm.JDK25 : TargetJvm.JDK17;
        List<String> source = TargetJvm.SOURCE.lines().toList();
        SourceLine mid = new SourceLine("HotSpotTarget.mid", "HotSpotTarget.java", lineOf(source, "return spinC(x) + 1;"),
                lineOf(source, "return spinC(x) + 1;")); // one statement: the method's first line too
        SourceLine inner = new SourceLine("HotSpotTarget.inner", "HotSpotTarget.java", lineOf(source, "return mid(x) ^ 3;"),
                lineOf(source, "return mid(x) ^ 3;")); // one statement: the method's first line too
        SourceLine outer = new SourceLine("HotSpotTarget.outer", "HotSpotTarget.java", lineOf(source, "return inner(x) + 7;"),
                lineOf(source, "return inner(x) + 7;")); // one statement: the method's first line too
        try (TargetJvm target = TargetJvm.start(home, dir, 300_000);
             HotSpotJvm reference = HotSpotJvm.open(HotSpotJvmTest.PROC, target.pid()).orElseThrow()) {
            AtomicLong now = new AtomicLong(1_000_000_000L);
            HotSpotRuntime runtime = HotSpotRuntime.reading(HotSpotJvmTest.PROC, now::get);
            try (RuntimeProcess p = runtime.open(target.pid(), "java").orElseThrow()) {
                int inlinedPcs = 0;
                for (CodeBlob b : reference.codeCache().blobs()) {
                    if (b.kind() != CodeBlob.Kind.NMETHOD || !reference.methodName(b.method()).orElse("").equals("HotSpotTarget.outer")) {
                        continue;
                    }
                    for (long pc = b.start(); pc < b.end(); pc++) {
                        RuntimeFrame f = p.code(pc, true, now.get());
                        if (f != null && f.inlined().equals(List.of("HotSpotTarget.mid", "HotSpotTarget.inner"))) {
                            assertEquals(List.of(mid, inner, outer), f.sourceLines(), "pc " + Long.toHexString(pc));
                            inlinedPcs++;
                        }
                    }
                    RuntimeFrame interpreted = p.taggedFrame(FrameType.HOTSPOT_METHOD, InterpreterFrameStep.value(b.method(), -1));
                    assertEquals(List.of(new SourceLine("HotSpotTarget.outer", "HotSpotTarget.java", 0, outer.startLine())),
                            interpreted.sourceLines(), "an interpreter frame whose bci the walk did not know: its file, no line");
                }
                System.out.printf("JDK %s: %d pcs of outer's code with mid and inner inlined, each at their lines %d, %d, %d%n",
                        jdk, inlinedPcs, mid.line(), inner.line(), outer.line());
                assertTrue(inlinedPcs > 0, "no pc of outer's code where mid and inner are inlined");
            }
        }
    }

    /** The 1-based line of the only line of {@code source} holding {@code text}. */
    static int lineOf(List<String> source, String text) {
        int found = 0;
        for (int i = 0; i < source.size(); i++) {
            if (source.get(i).contains(text)) {
                assertEquals(0, found, "'" + text + "' is on one line only");
                found = i + 1;
            }
        }
        assertTrue(found > 0, text);
        return found;
    }
}
