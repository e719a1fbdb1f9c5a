package dev.loupe.agent.ship;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The client's pure rules: status classification, header encodings, configuration checks. */
class GrpcRulesTest {
    @TempDir
    Path dir;

    private static SendResult grpc(String status, String message, boolean trailersOnly) {
        return ParcaClient.classify(new ParcaClient.Exchange.Reply(200, "h2_prior_knowledge", status, message,
                trailersOnly, null));
    }

    @Test
    void onlyTransientStatusesAreRetried() {
        Set<Integer> retryable = Set.of(4, 8, 10, 14);
        assertEquals(SendResult.DELIVERED, grpc("0", null, false));
        for (int code = 1; code <= 16; code++) {
            SendResult r = grpc(Integer.toString(code), "m", code % 2 == 0);
            if (retryable.contains(code)) {
                assertInstanceOf(SendResult.Retryable.class, r, "code " + code);
            } else {
                assertInstanceOf(SendResult.Rejected.class, r, "code " + code);
            }
        }
        assertEquals(new SendResult.Rejected("grpc-status 42 (unknown code): m"), grpc("42", "m", false));
        assertEquals(new SendResult.Rejected("unparseable grpc-status \"fourteen\" (HTTP 200)"), grpc("fourteen", null, false));
        assertEquals(new SendResult.Retryable("grpc-status 4 DEADLINE_EXCEEDED"), grpc("4", "", false));
    }

    @Test
    void withoutGrpcStatusTheHttpStatusDecides() {
        for (int http : new int[] {408, 429, 502, 503, 504}) {
            assertInstanceOf(SendResult.Retryable.class, ParcaClient.classify(
                    new ParcaClient.Exchange.Reply(http, "h2", null, null, false, null)), "HTTP " + http);
        }
        for (int http : new int[] {200, 400, 401, 403, 404, 500}) {
            assertInstanceOf(SendResult.Rejected.class, ParcaClient.classify(
                    new ParcaClient.Exchange.Reply(http, "h2", null, null, false, null)), "HTTP " + http);
        }
        assertInstanceOf(SendResult.Retryable.class, ParcaClient.classify(
                new ParcaClient.Exchange.TransportFailure(new java.net.SocketTimeoutException("timeout"))));
    }

    @Test
    void grpcTimeoutHasAtMostEightDigits() {
        assertEquals("1m", ParcaClient.grpcTimeout(1));
        assertEquals("10000m", ParcaClient.grpcTimeout(10_000));
        assertEquals("99999999m", ParcaClient.grpcTimeout(99_999_999));
        assertEquals("100000S", ParcaClient.grpcTimeout(100_000_000));
        assertEquals("99999999S", ParcaClient.grpcTimeout(Long.MAX_VALUE));
    }

    @Test
    void grpcMessageIsPercentDecodedUtf8() {
        assertEquals("plain", ParcaClient.percentDecode("plain"));
        assertEquals("a b%c", ParcaClient.percentDecode("a%20b%25c"));
        assertEquals("é ✓", ParcaClient.percentDecode("%C3%A9%20%E2%9C%93"));
        assertEquals("100%", ParcaClient.percentDecode("100%"), "a dangling % stays");
        assertEquals("%zz ok", ParcaClient.percentDecode("%zz%20ok"));
    }

    @Test
    void addressesAreHostAndPort() {
        var c = ParcaClientConfig.builder("parca.example:7070").build();
        assertEquals("parca.example", c.host());
        assertEquals(7070, c.port());
        var v6 = ParcaClientConfig.builder("[::1]:7070").insecure(true).build();
        assertEquals("::1", v6.host());
        assertTrue(v6.toString().contains("[::1]:7070"), v6.toString());
        for (String bad : new String[] {"", "parca", "parca:", ":7070", "parca:0", "parca:70000", "::1:7070",
                "http://parca:7070", "[::1]7070", "parca:x"}) {
            assertThrows(IllegalArgumentException.class, () -> ParcaClientConfig.builder(bad).build(), bad);
        }
    }

    @Test
    void contradictionsAndProtocolHeadersAreRefused() {
        assertThrows(IllegalArgumentException.class,
                () -> ParcaClientConfig.builder("a:1").insecure(true).caFile(dir.resolve("ca")).build());
        assertThrows(IllegalArgumentException.class,
                () -> ParcaClientConfig.builder("a:1").insecure(true).insecureSkipVerify(true).build());
        assertThrows(IllegalArgumentException.class,
                () -> ParcaClientConfig.builder("a:1").clientCertificate(dir.resolve("c"), null).build());
        assertThrows(IllegalArgumentException.class,
                () -> ParcaClientConfig.builder("a:1").timeout(Duration.ZERO).build());
        for (String reserved : new String[] {"Content-Type", "te", "grpc-timeout", "Host", ":path", "bad name"}) {
            assertThrows(IllegalArgumentException.class, () -> ParcaClientConfig.builder("a:1").header(reserved, "x"), reserved);
        }
        assertThrows(IllegalArgumentException.class, () -> ParcaClientConfig.builder("a:1").header("x", "a\nb"));
        assertThrows(IllegalArgumentException.class, () -> ParcaClientConfig.builder("a:1")
                .bearerTokenFile(dir.resolve("t")).header("Authorization", "Bearer x").build());
        var c = ParcaClientConfig.builder("a:1").header("ProjectID", "secret-project").build();
        assertEquals("secret-project", c.headers().get("projectid"));
        assertFalse(c.toString().contains("secret-project"), c.toString());
    }

    @Test
    void badTokenFilesFailAtCreateNamingTheFileNotTheContent() throws Exception {
        Path missing = dir.resolve("missing");
        IOException e = assertThrows(IOException.class, () -> ParcaClient.create(
                ParcaClientConfig.builder("a:1").insecure(true).bearerTokenFile(missing).build()));
        assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());

        Path empty = Files.writeString(dir.resolve("empty"), " \n");
        e = assertThrows(IOException.class, () -> ParcaClient.create(
                ParcaClientConfig.builder("a:1").insecure(true).bearerTokenFile(empty).build()));
        assertTrue(e.getMessage().contains("is empty"), e.getMessage());

        Path twoLines = Files.writeString(dir.resolve("two"), "abc-secret\nX-Injected: yes\n");
        e = assertThrows(IOException.class, () -> ParcaClient.create(
                ParcaClientConfig.builder("a:1").insecure(true).bearerTokenFile(twoLines).build()));
        assertFalse(e.getMessage().contains("abc-secret"), e.getMessage());

        Path notPem = Files.writeString(dir.resolve("ca.pem"), "not a certificate");
        e = assertThrows(IOException.class, () -> ParcaClient.create(
                ParcaClientConfig.builder("a:1").caFile(notPem).build()));
        assertTrue(e.getMessage().contains(notPem.toString()), e.getMessage());
    }
}
