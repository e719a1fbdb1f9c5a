package dev.loupe.agent.service;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * A receiver that is not Loupe's code: Python's socket module binds the {@code AF_UNIX} datagram socket
 * (an abstract name exactly as systemd binds it) and prints each datagram it receives as hex, so the tests
 * see the exact bytes systemd would.
 */
final class NotifyReceiver implements AutoCloseable {
    private static final String SCRIPT = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            a = sys.argv[1]
            s.bind('\\0' + a[1:] if a.startswith('@') else a)
            print('bound', flush=True)
            s.settimeout(20)
            while True:
                print(s.recv(65536).hex(), flush=True)
            """;

    private final Process python;
    private final BufferedReader out;

    NotifyReceiver(String notifySocket) throws IOException {
        python = new ProcessBuilder("/usr/bin/python3", "-c", SCRIPT, notifySocket)
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        out = new BufferedReader(new InputStreamReader(python.getInputStream(), StandardCharsets.US_ASCII));
        assertEquals("bound", out.readLine(), "python3 could not bind " + notifySocket);
    }

    /** The next datagram, as text (the protocol is UTF-8 text); fails after 20 s without one. */
    String next() throws IOException {
        String hex = out.readLine();
        assertNotNull(hex, "the receiver got no datagram within 20 s");
        return new String(HexFormat.of().parseHex(hex), StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        python.destroy();
    }
}
