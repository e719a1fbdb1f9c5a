package dev.loupe.config;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The http options: their defaults, flags and keys, and the combinations refused before anything starts. */
class HttpSettingsTest {
    @Test
    void defaultsServeNoProfilesAndNoSocket() {
        HttpSettings h = LoupeConfig.defaults().http();
        assertEquals("127.0.0.1:7071", h.address().orElseThrow().getHostString() + ":" + h.address().orElseThrow().getPort());
        assertEquals(HttpSettings.Profiles.OFF, h.profiles());
        assertEquals(Optional.empty(), h.bearerTokenFile());
        assertEquals(Optional.empty(), h.tlsCertFile());
        assertEquals(Optional.empty(), h.tlsKeyFile());
        assertEquals(Optional.empty(), h.socket());
        assertEquals(false, h.tls());
    }

    @Test
    void flags() throws Exception {
        HttpSettings h = CommandLine.parse(new String[] {"--http", "0.0.0.0:9000", "--http-profiles", "on",
                "--http-bearer-token-file", "/etc/loupe/token", "--http-tls-cert-file", "/etc/c.pem",
                "--http-tls-key-file", "/etc/k.pem", "--http-socket", "/run/loupe/loupe.sock"}).config().http();
        assertEquals(HttpSettings.Profiles.ON, h.profiles());
        assertEquals(Optional.of(Path.of("/etc/loupe/token")), h.bearerTokenFile());
        assertEquals(Optional.of(Path.of("/etc/c.pem")), h.tlsCertFile());
        assertEquals(Optional.of(Path.of("/etc/k.pem")), h.tlsKeyFile());
        assertEquals(true, h.tls());
        assertEquals(Optional.of(Path.of("/run/loupe/loupe.sock")), h.socket());
        assertEquals(HttpSettings.Profiles.UNAUTHENTICATED,
                CommandLine.parse(new String[] {"--http-profiles", "unauthenticated"}).config().http().profiles());
        // A flag wins over the file's key, as for every option: ./loupe run's --http-profiles default relies on it.
        assertEquals(Optional.empty(), CommandLine.parse(new String[] {"--http-socket", "off"}).config().http().socket());
    }

    @Test
    void fileKeys() throws Exception {
        HttpSettings h = ConfigLoader.parse("""
                http:
                  address: "[::1]:7071"
                  profiles: unauthenticated
                  socket: /run/loupe/loupe.sock
                """, "h.yaml").http();
        assertEquals(HttpSettings.Profiles.UNAUTHENTICATED, h.profiles());
        assertEquals(Optional.of(Path.of("/run/loupe/loupe.sock")), h.socket());
    }

    @Test
    void combinationsRefused() {
        assertEquals("h.yaml:2: http.profiles: on needs http.bearer-token-file (--http-bearer-token-file FILE: the "
                + "token clients send as 'Authorization: Bearer <token>')", bad("http:\n  profiles: on\n").getMessage());
        assertEquals("h.yaml:2: http.bearer-token-file is set but http.profiles is off: the token is only asked for "
                + "with http.profiles: on", bad("http:\n  bearer-token-file: /t\n").getMessage());
        assertEquals("h.yaml:3: http.profiles: unauthenticated serves every process's stacks without a token, so only on a "
                + "loopback address, not http.address 0.0.0.0:7071 (use http.profiles: on with http.bearer-token-file, or "
                + "off; ./loupe run adds --http-profiles unauthenticated unless given --http-profiles or --config)",
                bad("http:\n  address: 0.0.0.0:7071\n  profiles: unauthenticated\n").getMessage());
        assertEquals("h.yaml:2: http.tls-cert-file and http.tls-key-file go together (TLS needs the certificate and its key)",
                bad("http:\n  tls-cert-file: /c.pem\n").getMessage());
        assertEquals("h.yaml:2: http.tls-cert-file and http.tls-key-file go together (TLS needs the certificate and its key)",
                bad("http:\n  tls-key-file: /k.pem\n").getMessage());
        assertEquals("h.yaml:2: http.profiles: must be off, on or unauthenticated, got \"yes\"",
                bad("http:\n  profiles: yes\n").getMessage());
        assertEquals("h.yaml:2: http.socket: a Unix socket path has at most 107 bytes, got 108: /" + "s".repeat(107),
                bad("http:\n  socket: /" + "s".repeat(107) + "\n").getMessage());
        ConfigException flag = assertThrows(ConfigException.class,
                () -> CommandLine.parse(new String[] {"--http", "10.1.2.3:7071", "--http-profiles", "unauthenticated"}));
        assertEquals("command line: http.profiles: unauthenticated serves every process's stacks without a token, so only "
                + "on a loopback address, not http.address 10.1.2.3:7071 (use http.profiles: on with "
                + "http.bearer-token-file, or off; ./loupe run adds --http-profiles unauthenticated unless given "
                + "--http-profiles or --config)", flag.getMessage());
    }

    @Test
    void unauthenticatedOnLoopbackOrWithoutTcp() throws Exception {
        for (String address : new String[] {"127.0.0.1:7071", "127.0.0.9:1", "[::1]:7071", "localhost:7071", "off"}) {
            assertEquals(HttpSettings.Profiles.UNAUTHENTICATED, CommandLine.parse(new String[] {"--http", address,
                    "--http-profiles", "unauthenticated"}).config().http().profiles(), address);
        }
    }

    private static ConfigException bad(String yaml) {
        return assertThrows(ConfigException.class, () -> ConfigLoader.parse(yaml, "h.yaml"));
    }
}
