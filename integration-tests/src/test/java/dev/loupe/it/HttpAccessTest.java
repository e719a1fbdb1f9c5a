package dev.loupe.it;

import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.proto.Profile;
import okhttp3.tls.HeldCertificate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Who may read profiles, as another user sees it: the real agent (root) with a bearer token on TCP and a Unix
 * socket in a setgid directory of a fresh group, and curl run as nobody, with and without that group; then TLS
 * with certificates made here, curl trusting their CA.
 */
class HttpAccessTest {
    private static final String NOBODY = "65534";
    private static final Pattern STATUS = Pattern.compile("status=(\\d{3}) challenge=(.*)");

    @TempDir
    Path dir;

    /** What curl said: its exit, the HTTP status (000: no answer), WWW-Authenticate, the body and stderr. */
    record Curl(int exit, int status, String challenge, byte[] body, String stderr, long millis) {
        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    /**
     * curl as nobody ({@code groups}: its supplementary groups, empty for none), the body on its standard output
     * (a file this test opened, so nobody needs no directory of its own).
     */
    private Curl curlAsNobody(String groups, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("setpriv", "--reuid=" + NOBODY, "--regid=" + NOBODY,
                groups.isEmpty() ? "--clear-groups" : "--groups=" + groups, "curl", "-sS", "--max-time", "60",
                "-w", "%{stderr}status=%{http_code} challenge=%header{www-authenticate}\\n"));
        cmd.addAll(List.of(args));
        Path body = Files.createTempFile(dir, "curl", ".out");
        Path err = Files.createTempFile(dir, "curl", ".err");
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(cmd).redirectOutput(body.toFile()).redirectError(err.toFile()).start();
        if (!p.waitFor(90, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("curl still running after 90 s: " + cmd);
        }
        long millis = (System.nanoTime() - t0) / 1_000_000;
        String stderr = Files.readString(err);
        Matcher m = STATUS.matcher(stderr);
        if (!m.find()) {
            throw new AssertionError("no status from curl (exit " + p.exitValue() + "): " + stderr);
        }
        return new Curl(p.exitValue(), Integer.parseInt(m.group(1)), m.group(2).strip(), Files.readAllBytes(body), stderr, millis);
    }

    /** A profile body: gzipped pprof with samples, which the real go tool pprof reads; its -top. */
    private String checkedProfile(Curl r, String name) throws Exception {
        assertEquals(0, r.exit(), r.stderr());
        assertEquals(200, r.status(), r.stderr() + r.text());
        assertEquals(0x1f, r.body()[0] & 0xff, "gzip");
        assertEquals(0x8b, r.body()[1] & 0xff, "gzip");
        Profile p = PprofFiles.parse(r.body());
        assertTrue(p.getSampleCount() > 0, "samples in " + name);
        Path file = Files.write(dir.resolve(name + ".pb.gz"), r.body());
        return PprofTool.run("-top", file.toString());
    }

    private static String run(String... cmd) throws Exception {
        return Commands.run(List.of(cmd), 30).check().output().strip();
    }

    @Test
    void tokenOnTcpAndTheSocketForItsGroup() throws Exception {
        String group = "loupe-it-" + UUID.randomUUID().toString().substring(0, 8);
        run("groupadd", group);
        Path socketDir = null;
        Process target = null;
        try {
            String gid = run("getent", "group", group).split(":")[2];
            // As systemd's RuntimeDirectory= makes /run/loupe, with the group given by the directory (setgid).
            socketDir = Files.createTempDirectory(Path.of("/tmp"), "loupe-http-");
            run("chgrp", group, socketDir.toString());
            run("chmod", "2750", socketDir.toString());
            Path socket = socketDir.resolve("loupe.sock");
            String token = "it-" + UUID.randomUUID();
            Path tokenFile = Files.writeString(dir.resolve("token"), token + "\n");
            Files.setPosixFilePermissions(tokenFile, PosixFilePermissions.fromString("rw-------"));
            target = Targets.start(Targets.build("callchain.c", dir, "served", "-fno-omit-frame-pointer"));
            int port = FreePort.next();
            String base = "http://127.0.0.1:" + port;
            try (AgentProcess agent = AgentProcess.start(dir, "--pid", Long.toString(target.pid()), "--frequency", "99",
                    "--interval", "120s", "--output", "off", "--http", "127.0.0.1:" + port, "--http-socket", socket.toString(),
                    "--http-profiles", "on", "--http-bearer-token-file", tokenFile.toString())) {
                agent.awaitSampling(Duration.ofSeconds(60));
                assertTrue(agent.log().contains(", " + base + "/metrics (profiles: on), " + socket + " (profiles, metrics)"),
                        agent.log());
                assertEquals("rw-rw----", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket, LinkOption.NOFOLLOW_LINKS)));
                assertEquals(group, Files.getAttribute(socket, "posix:group", LinkOption.NOFOLLOW_LINKS).toString(),
                        "the setgid directory's group");
                assertEquals("root", Files.getOwner(socket, LinkOption.NOFOLLOW_LINKS).getName());

                // TCP: refused at once without a token or with a wrong one, however long the profile asked for.
                Curl none = curlAsNobody("", base + "/debug/pprof/profile?seconds=30");
                assertEquals(401, none.status(), none.stderr());
                assertEquals("a bearer token is required: Authorization: Bearer <token>\n", none.text());
                assertEquals("Bearer realm=\"loupe\"", none.challenge());
                assertTrue(none.millis() < 10_000, "refused in " + none.millis() + " ms, without a 30 s capture");
                Curl wrong = curlAsNobody("", "-H", "Authorization: Bearer " + token + "x", base + "/debug/pprof/profile?seconds=30");
                assertEquals(401, wrong.status(), wrong.stderr());
                assertEquals("Bearer realm=\"loupe\", error=\"invalid_token\"", wrong.challenge());
                assertTrue(wrong.millis() < 10_000, "refused in " + wrong.millis() + " ms");
                String top = checkedProfile(curlAsNobody("", "-H", "Authorization: Bearer " + token,
                        base + "/debug/pprof/profile?seconds=3"), "tcp");
                assertTrue(top.contains("hot_a"), top);

                // /metrics needs no token; it counts the refusals.
                Curl metrics = curlAsNobody("", base + "/metrics");
                assertEquals(200, metrics.status(), metrics.stderr());
                for (String series : List.of(
                        "loupe_http_requests_refused_total{listener=\"tcp\",reason=\"no_token\"} 1.0",
                        "loupe_http_requests_refused_total{listener=\"tcp\",reason=\"wrong_token\"} 1.0",
                        "loupe_http_requests_refused_total{listener=\"tcp\",reason=\"profiles_off\"} 0.0",
                        "loupe_http_requests_refused_total{listener=\"unix\",reason=\"no_token\"} 0.0",
                        "loupe_http_reload_failures_total{file=\"bearer_token\"} 0.0")) {
                    assertTrue(metrics.text().contains("\n" + series + "\n"), series + " in:\n" + metrics.text());
                }

                // The socket: not for nobody, for nobody in the group.
                Curl denied = curlAsNobody("", "--unix-socket", socket.toString(), "http://localhost/healthz");
                assertEquals(7, denied.exit(), "curl: couldn't connect: " + denied.stderr());
                assertEquals(0, denied.status());
                assertTrue(denied.stderr().contains("Permission denied") || denied.stderr().contains("Couldn't connect"),
                        denied.stderr());
                Curl health = curlAsNobody(gid, "--unix-socket", socket.toString(), "http://localhost/healthz");
                assertEquals(200, health.status(), health.stderr());
                assertTrue(health.text().startsWith("{\"status\":\"ok\""), health.text());
                String socketTop = checkedProfile(curlAsNobody(gid, "--unix-socket", socket.toString(),
                        "http://localhost/debug/pprof/profile?seconds=3"), "unix");
                assertTrue(socketTop.contains("hot_a"), socketTop);
                assertTrue(agent.log().contains("/debug/pprof/profile for user nobody over the Unix socket"), agent.log());

                agent.terminate();
                int exit = agent.awaitExit(Duration.ofSeconds(30));
                assertTrue(exit == 0 || exit == 143, "exit " + exit + "\n" + agent.log());
                assertFalse(Files.exists(socket, LinkOption.NOFOLLOW_LINKS), "the agent removes its socket at exit");
            }
        } finally {
            Targets.kill(target);
            if (socketDir != null) {
                Directories.delete(socketDir);
            }
            Commands.run(List.of("groupdel", group), 30).check();
        }
    }

    @Test
    void tokenOverTls() throws Exception {
        HeldCertificate ca = new HeldCertificate.Builder().certificateAuthority(0).commonName("loupe it CA").build();
        HeldCertificate server = new HeldCertificate.Builder().commonName("loupe").addSubjectAlternativeName("127.0.0.1")
                .signedBy(ca).build();
        Path certFile = Files.writeString(dir.resolve("server.pem"), server.certificatePem() + ca.certificatePem());
        Path keyFile = Files.writeString(dir.resolve("server.key"), server.privateKeyPkcs8Pem());
        Files.setPosixFilePermissions(keyFile, PosixFilePermissions.fromString("rw-------"));
        String token = "tls-" + UUID.randomUUID();
        Path tokenFile = Files.writeString(dir.resolve("token"), token);
        Files.setPosixFilePermissions(tokenFile, PosixFilePermissions.fromString("rw-------"));
        // The CA certificate where nobody can read it.
        Path shared = Files.createTempDirectory(Path.of("/tmp"), "loupe-http-ca-");
        Process target = null;
        try {
            Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));
            Path caFile = Files.writeString(shared.resolve("ca.pem"), ca.certificatePem());
            Files.setPosixFilePermissions(caFile, PosixFilePermissions.fromString("rw-r--r--"));
            target = Targets.start(Targets.build("callchain.c", dir, "served", "-fno-omit-frame-pointer"));
            int port = FreePort.next();
            String base = "https://127.0.0.1:" + port;
            try (AgentProcess agent = AgentProcess.start(dir, "--pid", Long.toString(target.pid()), "--frequency", "99",
                    "--interval", "120s", "--output", "off", "--http", "127.0.0.1:" + port, "--http-profiles", "on",
                    "--http-bearer-token-file", tokenFile.toString(), "--http-tls-cert-file", certFile.toString(),
                    "--http-tls-key-file", keyFile.toString())) {
                agent.awaitSampling(Duration.ofSeconds(60));
                assertTrue(agent.log().contains(", " + base + "/metrics (profiles: on)"), agent.log());

                String top = checkedProfile(curlAsNobody("", "--cacert", caFile.toString(), "-H", "Authorization: Bearer " + token,
                        base + "/debug/pprof/profile?seconds=3"), "tls");
                assertTrue(top.contains("hot_a"), top);
                Curl none = curlAsNobody("", "--cacert", caFile.toString(), base + "/debug/pprof/profile?seconds=3");
                assertEquals(401, none.status(), none.stderr());
                Curl metrics = curlAsNobody("", "--cacert", caFile.toString(), base + "/metrics");
                assertEquals(200, metrics.status(), metrics.stderr());
                assertTrue(metrics.text().contains("\nloupe_http_reload_failures_total{file=\"tls\"} 0.0\n"), metrics.text());
                // Without the CA, curl refuses the certificate (60: peer certificate cannot be authenticated).
                assertEquals(60, curlAsNobody("", base + "/metrics").exit());
                // Plain HTTP to the TLS port: no HTTP answer at all.
                Curl plain = curlAsNobody("", "http://127.0.0.1:" + port + "/metrics");
                assertNotEquals(0, plain.exit(), plain.stderr());
                assertEquals(0, plain.status(), plain.stderr());
            }
        } finally {
            Targets.kill(target);
            Directories.delete(shared);
        }
    }
}
