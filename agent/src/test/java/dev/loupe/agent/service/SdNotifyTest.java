package dev.loupe.agent.service;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SdNotifyTest {
    private static final long OWN_PID = 4242;

    private static SdNotify notifier(Map<String, String> env, AtomicLong nanos) {
        return SdNotify.from(env, OWN_PID, nanos::get);
    }

    @Test
    void sendsEachStateAsOneDatagramToASocketPath(@TempDir Path dir) throws IOException {
        String socket = dir.resolve("notify").toString();
        AtomicLong nanos = new AtomicLong(987_654_321_123L);
        SdNotify n = notifier(Map.of("NOTIFY_SOCKET", socket), nanos);
        assertTrue(n.enabled());
        try (NotifyReceiver r = new NotifyReceiver(socket)) {
            assertTrue(n.ready());
            assertEquals("READY=1", r.next());
            assertTrue(n.status("42 samples/s from 3 processes"));
            assertEquals("STATUS=42 samples/s from 3 processes", r.next());
            assertTrue(n.watchdog());
            assertEquals("WATCHDOG=1", r.next());
            assertTrue(n.reloading());
            assertEquals("RELOADING=1\nMONOTONIC_USEC=987654321", r.next());
            assertTrue(n.stopping());
            assertEquals("STOPPING=1", r.next());
        }
    }

    @Test
    void sendsToAnAbstractSocketByItsExactName() throws IOException {
        String socket = "@loupe-test-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        SdNotify n = notifier(Map.of("NOTIFY_SOCKET", socket), new AtomicLong());
        try (NotifyReceiver r = new NotifyReceiver(socket)) {
            assertTrue(n.ready());
            assertEquals("READY=1", r.next());
            assertTrue(n.status("café ☕")); // UTF-8 on the wire
            assertEquals("STATUS=café ☕", r.next());
        }
    }

    @Test
    void aStatusStaysOneAssignment(@TempDir Path dir) throws IOException {
        String socket = dir.resolve("n").toString();
        SdNotify n = notifier(Map.of("NOTIFY_SOCKET", socket), new AtomicLong());
        try (NotifyReceiver r = new NotifyReceiver(socket)) {
            n.status("parca DOWN (line one\nREADY=1\r\n)");
            assertEquals("STATUS=parca DOWN (line one READY=1  )", r.next());
        }
    }

    @Test
    void withoutNotifySocketEveryCallIsANoOp() throws IOException {
        for (Map<String, String> env : java.util.List.of(Map.<String, String>of(), Map.of("NOTIFY_SOCKET", ""))) {
            SdNotify n = notifier(env, new AtomicLong());
            assertFalse(n.enabled());
            assertFalse(n.ready());
            assertFalse(n.status("x"));
            assertFalse(n.watchdog());
            assertFalse(n.reloading());
            assertFalse(n.stopping());
        }
    }

    @Test
    void aMissingSocketIsAnIOExceptionWithErrno(@TempDir Path dir) {
        String socket = dir.resolve("nobody-here").toString();
        SdNotify n = notifier(Map.of("NOTIFY_SOCKET", socket), new AtomicLong());
        IOException e = assertThrows(IOException.class, n::ready);
        assertEquals("sendto(" + socket + ") failed: No such file or directory (errno 2)", e.getMessage());
    }

    @Test
    void socketAddressesAreSunPathBytes() {
        assertArrayEquals("/run/systemd/notify\0".getBytes(StandardCharsets.UTF_8),
                SdNotify.socketAddress("/run/systemd/notify"));
        assertArrayEquals(new byte[] {0, 'n', 'o', 't', 'e'}, SdNotify.socketAddress("@note"));
        assertEquals("/run/systemd/notify", UnixDatagram.printable(SdNotify.socketAddress("/run/systemd/notify")));
        assertEquals("@note", UnixDatagram.printable(SdNotify.socketAddress("@note")));
        String longest = "/" + "p".repeat(106);
        assertEquals(108, SdNotify.socketAddress(longest).length);
        assertEquals(108, SdNotify.socketAddress("@" + "a".repeat(107)).length);
    }

    @Test
    void unusableSocketAddressesAreRefusedByName() {
        assertEquals("NOTIFY_SOCKET=vsock:2:1234 is neither an absolute path nor an abstract socket name (@name);"
                        + " Loupe speaks sd_notify over AF_UNIX only",
                assertThrows(IllegalArgumentException.class, () -> SdNotify.socketAddress("vsock:2:1234")).getMessage());
        assertThrows(IllegalArgumentException.class, () -> SdNotify.socketAddress("@"));
        assertThrows(IllegalArgumentException.class, () -> SdNotify.socketAddress("run/notify"));
        assertEquals("NOTIFY_SOCKET=/" + "p".repeat(107) + " is longer than a socket address (107 bytes)",
                assertThrows(IllegalArgumentException.class, () -> SdNotify.socketAddress("/" + "p".repeat(107))).getMessage());
        assertThrows(IllegalArgumentException.class, () -> SdNotify.socketAddress("@" + "a".repeat(108)));
    }

    @Test
    void theWatchdogIsOursOnlyWhenItsPidIsOurs() {
        assertEquals(Optional.empty(), SdNotify.watchdogInterval(Map.of(), OWN_PID));
        assertEquals(Optional.of(Duration.ofSeconds(30)),
                SdNotify.watchdogInterval(Map.of("WATCHDOG_USEC", "30000000"), OWN_PID));
        assertEquals(Optional.of(Duration.ofMillis(1500)),
                SdNotify.watchdogInterval(Map.of("WATCHDOG_USEC", "1500000", "WATCHDOG_PID", "4242"), OWN_PID));
        assertEquals(Optional.empty(),
                SdNotify.watchdogInterval(Map.of("WATCHDOG_USEC", "1500000", "WATCHDOG_PID", "4243"), OWN_PID),
                "a child that inherited its parent's watchdog must not ping for it");
        assertEquals(Optional.of(Duration.ofSeconds(20)), notifier(
                Map.of("NOTIFY_SOCKET", "@x", "WATCHDOG_USEC", "20000000", "WATCHDOG_PID", "4242"), new AtomicLong())
                .watchdogInterval());
    }

    @Test
    void malformedWatchdogVariablesAreNamed() {
        assertEquals("WATCHDOG_USEC=0 is not a positive integer", assertThrows(IllegalArgumentException.class,
                () -> SdNotify.watchdogInterval(Map.of("WATCHDOG_USEC", "0"), OWN_PID)).getMessage());
        assertEquals("WATCHDOG_USEC=30s is not a positive integer", assertThrows(IllegalArgumentException.class,
                () -> SdNotify.watchdogInterval(Map.of("WATCHDOG_USEC", "30s"), OWN_PID)).getMessage());
        assertEquals("WATCHDOG_PID=-1 is not a positive integer", assertThrows(IllegalArgumentException.class,
                () -> SdNotify.watchdogInterval(Map.of("WATCHDOG_USEC", "5", "WATCHDOG_PID", "-1"), OWN_PID)).getMessage());
    }
}
