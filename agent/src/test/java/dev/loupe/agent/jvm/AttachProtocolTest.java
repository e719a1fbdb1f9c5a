package dev.loupe.agent.jvm;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class AttachProtocolTest {
    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    @Test
    void thePerfMapRequestByteForByte() {
        byte[] expected = {'1', 0, 'j', 'c', 'm', 'd', 0, 'C', 'o', 'm', 'p', 'i', 'l', 'e', 'r', '.', 'p', 'e', 'r', 'f',
                'm', 'a', 'p', 0, 0, 0};
        assertArrayEquals(expected, AttachProtocol.perfMapRequest());
        assertArrayEquals(bytes("1\0jcmd\0Compiler.perfmap\0\0\0"), AttachProtocol.perfMapRequest());
        assertEquals(26, AttachProtocol.perfMapRequest().length);
    }

    @Test
    void alwaysThreeArguments() {
        assertArrayEquals(bytes("1\0properties\0\0\0\0"), AttachProtocol.request("properties"));
        assertArrayEquals(bytes("1\0load\0instrument\0false\0a=b\0"), AttachProtocol.request("load", "instrument", "false", "a=b"));
        assertThrows(IllegalArgumentException.class, () -> AttachProtocol.request("x", "1", "2", "3", "4"));
    }

    @Test
    void hotSpotsLimitsAreKept() {
        AttachProtocol.request("sixteen-bytes-ok");
        assertThrows(IllegalArgumentException.class, () -> AttachProtocol.request("seventeen-bytes-x"));
        AttachProtocol.request("jcmd", "a".repeat(1024));
        assertThrows(IllegalArgumentException.class, () -> AttachProtocol.request("jcmd", "a".repeat(1025)));
        assertThrows(IllegalArgumentException.class, () -> AttachProtocol.request("jcmd", "a\0b"));
    }

    @Test
    void repliesAreAResultLineThenOutput() {
        byte[] ok = bytes("0\n");
        assertEquals(new AttachProtocol.Reply(0, ""), AttachProtocol.parseReply(ok, ok.length));
        byte[] err = bytes("-1\njava.lang.IllegalArgumentException: Unknown diagnostic command\n");
        AttachProtocol.Reply r = AttachProtocol.parseReply(err, err.length);
        assertEquals(-1, r.result());
        assertEquals("java.lang.IllegalArgumentException: Unknown diagnostic command", r.firstLine());
        byte[] bad = bytes("101\n");
        assertEquals(101, AttachProtocol.parseReply(bad, bad.length).result()); // ATTACH_ERROR_BADVERSION
        byte[] padded = bytes("0\nsome output\n....");
        assertEquals("some output\n", AttachProtocol.parseReply(padded, 14).output()); // only `length` bytes count
    }

    @Test
    void aReplyWithoutResultLineIsAnError() {
        assertThrows(IllegalArgumentException.class, () -> AttachProtocol.parseReply(new byte[0], 0));
        assertThrows(IllegalArgumentException.class, () -> AttachProtocol.parseReply(bytes("0"), 1));
        assertThrows(IllegalArgumentException.class, () -> AttachProtocol.parseReply(bytes("ok\n"), 3));
    }
}
