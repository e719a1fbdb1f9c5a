package dev.loupe.agent.http;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static dev.loupe.agent.http.BearerToken.Verdict.ACCEPTED;
import static dev.loupe.agent.http.BearerToken.Verdict.NO_TOKEN;
import static dev.loupe.agent.http.BearerToken.Verdict.WRONG_TOKEN;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The token file's rules and the header check, on real files with an injected clock. */
class BearerTokenTest {
    @TempDir
    Path dir;
    private final AtomicLong now = new AtomicLong(1_000_000_000_000L);
    private final AtomicInteger failures = new AtomicInteger();

    private Path tokenFile(String name, String content, String mode) throws IOException {
        Path f = dir.resolve(name);
        Files.writeString(f, content);
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString(mode));
        return f;
    }

    private BearerToken open(Path f) throws IOException {
        return BearerToken.open(f, now::get, failures::incrementAndGet);
    }

    @Test
    void headerPerRfc6750() throws Exception {
        BearerToken t = open(tokenFile("token", "  s3cr3t-T0ken.~+/=\n", "rw-r-----"));
        assertEquals(ACCEPTED, t.check("Bearer s3cr3t-T0ken.~+/="), "whitespace around the file's token is not part of it");
        assertEquals(ACCEPTED, t.check("bearer s3cr3t-T0ken.~+/="), "the scheme is case-insensitive");
        assertEquals(ACCEPTED, t.check("BEARER s3cr3t-T0ken.~+/="));
        assertEquals(ACCEPTED, t.check("Bearer   s3cr3t-T0ken.~+/=  "), "spaces between scheme and token, and after");
        assertEquals(ACCEPTED, t.check("Bearer\ts3cr3t-T0ken.~+/="));
        assertEquals(WRONG_TOKEN, t.check("Bearer s3cr3t-T0ken.~+/"), "one character short");
        assertEquals(WRONG_TOKEN, t.check("Bearer s3cr3t-T0ken.~+/=="), "one character long");
        assertEquals(WRONG_TOKEN, t.check("Bearer S3CR3T-T0KEN.~+/="), "the token is case-sensitive");
        assertEquals(WRONG_TOKEN, t.check("Bearer x"));
        assertEquals(WRONG_TOKEN, t.check("Bearer"), "the scheme with no token");
        assertEquals(WRONG_TOKEN, t.check("Bearer s3cr3t-T0ken.~+/= extra"));
        assertEquals(NO_TOKEN, t.check(null), "no Authorization header");
        assertEquals(NO_TOKEN, t.check(""));
        assertEquals(NO_TOKEN, t.check("Basic czNjcjN0LVQwa2VuLn4rLz0="), "another scheme");
        assertEquals(NO_TOKEN, t.check("s3cr3t-T0ken.~+/="), "the token without its scheme");
        assertEquals(NO_TOKEN, t.check("Bearers s3cr3t-T0ken.~+/="));
        assertEquals(0, failures.get());
    }

    @Test
    void aFileOpenToOthersOrEmptyIsRefusedAtStart() throws Exception {
        Path readable = tokenFile("readable", "t", "rw-r--r--");
        assertEquals(readable + " is readable by every user (mode 0644): chmod o-rwx " + readable,
                assertThrows(IOException.class, () -> open(readable)).getMessage());
        Path writable = tokenFile("writable", "t", "rw-----w-");
        assertEquals(writable + " is writable by every user (mode 0602): chmod o-rwx " + writable,
                assertThrows(IOException.class, () -> open(writable)).getMessage());
        Path empty = tokenFile("empty", " \n\t\n", "rw-------");
        assertEquals(empty + " holds no token (it is empty)", assertThrows(IOException.class, () -> open(empty)).getMessage());
        Path big = tokenFile("big", "x".repeat(5000), "rw-------");
        assertEquals(big + " has 5000 bytes: a token file holds one token (at most 4096 bytes)",
                assertThrows(IOException.class, () -> open(big)).getMessage());
        assertThrows(java.nio.file.NoSuchFileException.class, () -> open(dir.resolve("missing")));
    }

    @Test
    void rotationAfterTheCheckInterval() throws Exception {
        Path f = tokenFile("token", "old-token\n", "rw-------");
        BearerToken t = open(f);
        assertEquals(ACCEPTED, t.check("Bearer old-token"));

        replace(f, "new-token\n", "rw-r-----");
        now.addAndGet(BearerToken.CHECK_INTERVAL_NANOS - 1);
        assertEquals(ACCEPTED, t.check("Bearer old-token"), "not looked at again within the second");
        assertEquals(WRONG_TOKEN, t.check("Bearer new-token"));
        now.addAndGet(1);
        assertEquals(ACCEPTED, t.check("Bearer new-token"), "a second on: the new file");
        assertEquals(WRONG_TOKEN, t.check("Bearer old-token"));

        // Rewritten in place (same inode, new size and time) rather than replaced.
        Files.writeString(f, "in-place-token");
        now.addAndGet(BearerToken.CHECK_INTERVAL_NANOS);
        assertEquals(ACCEPTED, t.check("Bearer in-place-token"));
        assertEquals(0, failures.get());
    }

    @Test
    void aBrokenNewFileKeepsTheOldTokenAndCountsOnce() throws Exception {
        Path f = tokenFile("token", "good-token", "rw-------");
        BearerToken t = open(f);
        replace(f, "\n", "rw-------");
        now.addAndGet(BearerToken.CHECK_INTERVAL_NANOS);
        assertEquals(ACCEPTED, t.check("Bearer good-token"), "an empty new file keeps the token");
        now.addAndGet(BearerToken.CHECK_INTERVAL_NANOS);
        assertEquals(ACCEPTED, t.check("Bearer good-token"));
        assertEquals(1, failures.get(), "the same broken version counts once");

        replace(f, "leaked-token", "rw-r--r--");
        now.addAndGet(BearerToken.CHECK_INTERVAL_NANOS);
        assertEquals(WRONG_TOKEN, t.check("Bearer leaked-token"), "a token others can read is never taken");
        assertEquals(ACCEPTED, t.check("Bearer good-token"));
        assertEquals(2, failures.get());

        Files.delete(f);
        now.addAndGet(BearerToken.CHECK_INTERVAL_NANOS);
        assertEquals(ACCEPTED, t.check("Bearer good-token"), "a deleted file keeps the token");
        assertEquals(3, failures.get());

        replace(f, "fixed-token", "rw-------");
        now.addAndGet(BearerToken.CHECK_INTERVAL_NANOS);
        assertEquals(ACCEPTED, t.check("Bearer fixed-token"), "a good file after broken ones is taken");
        assertEquals(WRONG_TOKEN, t.check("Bearer good-token"));
        assertEquals(3, failures.get());
    }

    /** As a deployment tool replaces a file: written beside it, then renamed over it. */
    private void replace(Path f, String content, String mode) throws IOException {
        Path tmp = tokenFile(f.getFileName() + ".tmp", content, mode);
        Files.move(tmp, f, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}
