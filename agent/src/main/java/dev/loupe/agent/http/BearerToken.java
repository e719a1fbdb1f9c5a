package dev.loupe.agent.http;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.function.LongSupplier;

/**
 * The token of {@code http.bearer-token-file} and the check of a request's {@code Authorization} header against
 * it (RFC 6750: scheme {@code Bearer} in any case, then the token). The file must not be open to other users; it
 * is looked at again at most once a second (on a request), so a token is rotated by replacing the file, and a
 * broken new file keeps the token before it. Comparison is of SHA-256 digests with {@link MessageDigest#isEqual},
 * so neither the token's bytes nor its length leak through timing. Thread-safe.
 */
final class BearerToken {
    /** What a request's header is to the token. */
    enum Verdict { ACCEPTED, NO_TOKEN, WRONG_TOKEN }

    static final long CHECK_INTERVAL_NANOS = 1_000_000_000L;
    /** A token file is a line of text; anything bigger is a mistake (a certificate, a log). */
    static final int MAX_BYTES = 4096;
    private static final System.Logger LOG = System.getLogger(BearerToken.class.getName());

    private final Path file;
    private final LongSupplier nanoTime;
    private final Runnable reloadFailed;
    private volatile byte[] digest;
    private FileStamp loaded;
    private FileStamp refused;
    private long checkedAt;

    private BearerToken(Path file, LongSupplier nanoTime, Runnable reloadFailed, byte[] digest, FileStamp loaded) {
        this.file = file;
        this.nanoTime = nanoTime;
        this.reloadFailed = reloadFailed;
        this.digest = digest;
        this.loaded = loaded;
        this.checkedAt = nanoTime.getAsLong();
    }

    /**
     * Reads the token now; a file that is missing, empty, too big or open to other users is refused with a message
     * for the user. {@code reloadFailed} is told of each new version of the file that could not be used.
     */
    static BearerToken open(Path file, LongSupplier nanoTime, Runnable reloadFailed) throws IOException {
        FileStamp stamp = FileStamp.of(file);
        return new BearerToken(file, nanoTime, reloadFailed, read(file, stamp), stamp);
    }

    /** {@code header}: the request's {@code Authorization} value, null when it has none. */
    Verdict check(String header) {
        if (header == null) {
            return Verdict.NO_TOKEN;
        }
        String h = header.strip();
        int space = 0;
        while (space < h.length() && h.charAt(space) != ' ' && h.charAt(space) != '\t') {
            space++;
        }
        if (!h.substring(0, space).equalsIgnoreCase("Bearer")) {
            return Verdict.NO_TOKEN; // no credentials of this scheme: the challenge says which
        }
        byte[] given = sha256(h.substring(space).strip().getBytes(StandardCharsets.UTF_8));
        refreshIfDue();
        return MessageDigest.isEqual(given, digest) ? Verdict.ACCEPTED : Verdict.WRONG_TOKEN;
    }

    /** At most once per {@link #CHECK_INTERVAL_NANOS}: a new version of the file replaces the token if it is usable. */
    private synchronized void refreshIfDue() {
        long now = nanoTime.getAsLong();
        if (now - checkedAt < CHECK_INTERVAL_NANOS) {
            return;
        }
        checkedAt = now;
        FileStamp stamp;
        IOException unreadable = null;
        try {
            stamp = FileStamp.of(file);
        } catch (IOException e) {
            stamp = FileStamp.MISSING;
            unreadable = e;
        }
        if (stamp.sameVersion(loaded) || stamp.sameVersion(refused)) {
            return; // unchanged, or the same broken version as last time (said once)
        }
        try {
            if (unreadable != null) {
                throw new IOException(unreadable instanceof java.nio.file.NoSuchFileException ? file + " does not exist"
                        : "cannot read " + file + ": " + unreadable.getMessage(), unreadable);
            }
            digest = read(file, stamp);
            loaded = stamp;
            refused = null;
            LOG.log(System.Logger.Level.INFO, "http.bearer-token-file " + file + " changed: its new token is in use");
        } catch (IOException e) {
            refused = stamp;
            reloadFailed.run();
            LOG.log(System.Logger.Level.WARNING, "http.bearer-token-file changed but cannot be used, the previous token "
                    + "stays in use: " + e.getMessage());
        }
    }

    private static byte[] read(Path file, FileStamp stamp) throws IOException {
        if (FileStamp.openToOthers(stamp.permissions())) {
            String what = stamp.permissions().contains(PosixFilePermission.OTHERS_READ) ? "readable"
                    : stamp.permissions().contains(PosixFilePermission.OTHERS_WRITE) ? "writable" : "executable";
            throw new IOException(file + " is " + what + " by every user (mode " + FileStamp.octal(stamp.permissions())
                    + "): chmod o-rwx " + file);
        }
        if (stamp.size() > MAX_BYTES) {
            throw new IOException(file + " has " + stamp.size() + " bytes: a token file holds one token (at most "
                    + MAX_BYTES + " bytes)");
        }
        String token = Files.readString(file, StandardCharsets.UTF_8).strip();
        if (token.isEmpty()) {
            throw new IOException(file + " holds no token (it is empty)");
        }
        return sha256(token.getBytes(StandardCharsets.UTF_8));
    }

    static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }
}
