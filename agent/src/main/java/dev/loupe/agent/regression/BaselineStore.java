package dev.loupe.agent.regression;

import dev.loupe.agent.files.DurableFiles;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * The baselines directory: one file per function ({@link BaselineFile}), named by a hash of its binary and
 * function ({@value #SUFFIX}), written through {@link DurableFiles} (temp file, fsync, rename), so a crash
 * leaves each file old or new, never torn. A file that cannot be read (damaged, written by a newer agent, wrong
 * name) is logged and renamed to {@code NAME}{@value #SET_ASIDE_SUFFIX} (one per function, the latest), and its
 * function starts fresh: the agent starts whatever the directory holds.
 */
final class BaselineStore {
    private static final System.Logger LOG = System.getLogger(BaselineStore.class.getName());
    static final String SUFFIX = ".baseline";
    static final String SET_ASIDE_SUFFIX = ".unreadable";
    /** Far above any file the caps allow (25 + 10 slots, and a share of the profile sample cap). */
    static final long MAX_FILE_BYTES = 64L << 20;

    private final Path directory;

    BaselineStore(Path directory) {
        this.directory = directory;
    }

    Path directory() {
        return directory;
    }

    static String fileName(FunctionKey key) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            sha.update(key.binary().getBytes(StandardCharsets.UTF_8));
            sha.update((byte) 0);
            sha.update(key.function().getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(sha.digest(), 0, 16) + SUFFIX;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    /**
     * Every readable function in the directory; unfinished temp files are deleted, unreadable files set aside
     * (each logged once). Never throws: a directory that cannot be listed is logged and gives nothing.
     */
    List<FunctionBaselines> load(Interner<Object> interner) {
        List<FunctionBaselines> loaded = new ArrayList<>();
        if (!Files.isDirectory(directory)) {
            return loaded;
        }
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> dir = Files.newDirectoryStream(directory)) {
            dir.forEach(files::add);
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "latency baselines: cannot list " + directory + ", starting without baselines: " + e);
            return loaded;
        }
        files.sort(null);
        for (Path f : files) {
            String name = f.getFileName().toString();
            if (name.endsWith(SUFFIX + DurableFiles.TEMP_SUFFIX)) {
                deleteQuietly(f);
            } else if (name.endsWith(SUFFIX)) {
                try {
                    loaded.add(read(f, interner));
                } catch (IOException | RuntimeException e) {
                    setAside(f, e);
                }
            }
        }
        return loaded;
    }

    private static FunctionBaselines read(Path f, Interner<Object> interner) throws IOException {
        long size = Files.size(f);
        if (size > MAX_FILE_BYTES) {
            throw new IllegalArgumentException(size + " bytes, more than the " + MAX_FILE_BYTES + " a baselines file may have");
        }
        FunctionBaselines b = BaselineFile.decode(Files.readAllBytes(f), interner);
        if (!fileName(b.key).equals(f.getFileName().toString())) {
            throw new IllegalArgumentException("holds " + b.key + ", which is not the function its name says");
        }
        return b;
    }

    private void setAside(Path f, Exception why) {
        Path aside = f.resolveSibling(f.getFileName() + SET_ASIDE_SUFFIX);
        String reason = why.getMessage() != null ? why.getMessage() : why.toString();
        try {
            DurableFiles.moveAtomically(f, aside);
            DurableFiles.fsyncDirectory(directory);
            LOG.log(System.Logger.Level.WARNING, "latency baselines: " + f + " is unreadable (" + reason
                    + "); set aside as " + aside.getFileName() + ", that function's baselines start again");
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "latency baselines: " + f + " is unreadable (" + reason
                    + ") and cannot be set aside (" + e + "); that function's baselines start again and overwrite it");
        }
    }

    private static void deleteQuietly(Path f) {
        try {
            Files.deleteIfExists(f);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "latency baselines: cannot delete the unfinished " + f + ": " + e);
        }
    }

    /** Writes one function's file (the caller forces the directory once after several, {@link #syncDirectory}). */
    void write(FunctionBaselines f) throws IOException {
        DurableFiles.createPrivateDirectories(directory);
        DurableFiles.write(directory.resolve(fileName(f.key)), ByteBuffer.wrap(BaselineFile.encode(f)));
    }

    void delete(FunctionKey key) throws IOException {
        Files.deleteIfExists(directory.resolve(fileName(key)));
    }

    void syncDirectory() throws IOException {
        DurableFiles.fsyncDirectory(directory);
    }
}
