package dev.loupe.agent.jvm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The client side of one attach exchange against a stand-in listener that reads as HotSpot does. */
class AttachExchangeTest {
    /** Reads strings until five NULs (version, command, three arguments), as HotSpot's v1 reader; then answers. */
    private static CompletableFuture<byte[]> serveOnce(ServerSocketChannel server, String reply, Duration delay) {
        return CompletableFuture.supplyAsync(() -> {
            try (SocketChannel c = server.accept()) {
                ByteArrayOutputStream got = new ByteArrayOutputStream();
                ByteBuffer b = ByteBuffer.allocate(1);
                int nuls = 0;
                while (nuls < 5 && c.read(b.clear()) > 0) {
                    got.write(b.get(0));
                    nuls += b.get(0) == 0 ? 1 : 0;
                }
                Thread.sleep(delay);
                c.write(ByteBuffer.wrap(reply.getBytes(StandardCharsets.UTF_8)));
                return got.toByteArray();
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    @Test
    void sendsTheRequestAndReadsTheReplyUntilClosed(@TempDir Path dir) throws Exception {
        Path socket = dir.resolve(".java_pid1234");
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(UnixDomainSocketAddress.of(socket));
            String big = "x".repeat(100_000) + "\n"; // more than one read
            CompletableFuture<byte[]> request = serveOnce(server, "0\n" + big, Duration.ZERO);
            AttachProtocol.Reply r = HotSpotAttacher.exchange(socket, AttachProtocol.perfMapRequest(), Duration.ofSeconds(10));
            assertArrayEquals(AttachProtocol.perfMapRequest(), request.get());
            assertEquals(0, r.result());
            assertEquals(big, r.output());
        }
    }

    @Test
    void aJvmThatDoesNotAnswerTimesOut(@TempDir Path dir) throws Exception {
        Path socket = dir.resolve(".java_pid1235");
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(UnixDomainSocketAddress.of(socket));
            CompletableFuture<byte[]> served = serveOnce(server, "0\n", Duration.ofSeconds(3));
            long t0 = System.nanoTime();
            IOException e = assertThrows(IOException.class,
                    () -> HotSpotAttacher.exchange(socket, AttachProtocol.perfMapRequest(), Duration.ofMillis(300)));
            assertTrue(e.getMessage().contains("timed out waiting for the reply"), e.getMessage());
            assertTrue(System.nanoTime() - t0 < Duration.ofSeconds(2).toNanos());
            served.handle((v, x) -> null).get(); // the stand-in's write may fail: the client is gone
        }
    }

    @Test
    void noListenerIsAnError(@TempDir Path dir) {
        assertThrows(IOException.class,
                () -> HotSpotAttacher.exchange(dir.resolve(".java_pid1"), AttachProtocol.perfMapRequest(), Duration.ofSeconds(1)));
    }

    @Test
    void linesAreCountedWithOrWithoutTheLastNewline(@TempDir Path dir) throws IOException {
        Path map = dir.resolve("perf-1.map");
        java.nio.file.Files.writeString(map, "0x1 0x2 a\n0x3 0x4 b\n");
        assertEquals(2, HotSpotAttacher.countLines(map));
        java.nio.file.Files.writeString(map, "0x1 0x2 a\n0x3 0x4 b");
        assertEquals(2, HotSpotAttacher.countLines(map));
        java.nio.file.Files.writeString(map, "");
        assertEquals(0, HotSpotAttacher.countLines(map));
        assertEquals(0, HotSpotAttacher.countLines(dir.resolve("missing.map")));
    }
}
