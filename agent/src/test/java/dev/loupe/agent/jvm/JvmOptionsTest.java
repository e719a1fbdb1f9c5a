package dev.loupe.agent.jvm;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class JvmOptionsTest {
    private static List<String> cmdline(String nulSeparated) {
        return JvmOptions.nulSeparated(nulSeparated.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void cmdlineIsNulSeparated() {
        assertEquals(List.of("java", "-Xrs", "-cp", ".", "Spin"), cmdline("java\0-Xrs\0-cp\0.\0Spin\0"));
        assertEquals(List.of("java", "", "x"), cmdline("java\0\0x\0")); // an empty argument stays
        assertEquals(List.of("java", "x"), cmdline("java\0x")); // no trailing NUL (a process that rewrote it)
        assertEquals(List.of(), cmdline(""));
    }

    @Test
    void theFlagOnTheCommandLineDisablesAttach() {
        assertTrue(JvmOptions.attachDisabled(cmdline("java\0-XX:+DisableAttachMechanism\0-cp\0.\0Spin\0"), List.of()));
        assertFalse(JvmOptions.attachDisabled(cmdline("java\0-Xrs\0-cp\0.\0Spin\0"), List.of()));
        assertFalse(JvmOptions.attachDisabled(cmdline("java\0-XX:+DisableAttachMechanismX\0Spin\0"), List.of()));
        assertFalse(JvmOptions.attachDisabled(cmdline("java\0-XX:DisableAttachMechanism\0Spin\0"), List.of()));
    }

    @Test
    void theLastOccurrenceWins() {
        assertFalse(JvmOptions.attachDisabled(
                cmdline("java\0-XX:+DisableAttachMechanism\0-XX:-DisableAttachMechanism\0Spin\0"), List.of()));
        assertTrue(JvmOptions.attachDisabled(
                cmdline("java\0-XX:-DisableAttachMechanism\0-XX:+DisableAttachMechanism\0Spin\0"), List.of()));
    }

    @Test
    void theVariablesCountInHotSpotsOrder() {
        List<String> plain = cmdline("java\0-cp\0.\0Spin\0");
        assertTrue(JvmOptions.attachDisabled(plain, List.of("HOME=/root", "JAVA_TOOL_OPTIONS=-Xmx1g -XX:+DisableAttachMechanism")));
        assertTrue(JvmOptions.attachDisabled(plain, List.of("JDK_JAVA_OPTIONS=-XX:+DisableAttachMechanism")));
        assertTrue(JvmOptions.attachDisabled(plain, List.of("_JAVA_OPTIONS=  -XX:+DisableAttachMechanism  ")));
        // JAVA_TOOL_OPTIONS comes before the command line, _JAVA_OPTIONS after it.
        assertFalse(JvmOptions.attachDisabled(cmdline("java\0-XX:-DisableAttachMechanism\0Spin\0"),
                List.of("JAVA_TOOL_OPTIONS=-XX:+DisableAttachMechanism")));
        assertTrue(JvmOptions.attachDisabled(cmdline("java\0-XX:-DisableAttachMechanism\0Spin\0"),
                List.of("_JAVA_OPTIONS=-XX:+DisableAttachMechanism")));
        assertFalse(JvmOptions.attachDisabled(plain, List.of("MY_JAVA_TOOL_OPTIONS=-XX:+DisableAttachMechanism")));
    }
}
