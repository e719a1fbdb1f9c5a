package dev.loupe.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;

/** A port on the loopback interface. */
public final class FreePort {
    private FreePort() {}

    /** A port free a moment ago (the server that gets it binds it soon after). */
    public static int next() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
