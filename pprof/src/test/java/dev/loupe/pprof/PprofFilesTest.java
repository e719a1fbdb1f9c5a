package dev.loupe.pprof;

import dev.loupe.pprof.proto.Profile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class PprofFilesTest {
    private static final Profile PROFILE = ProfileBuilderTest.sampleProfile();

    @Test
    void gzipIsStandardGzipOfTheSerializedProfile() throws Exception {
        byte[] gz = PprofFiles.gzip(PROFILE);
        assertEquals(0x1f, gz[0] & 0xff);
        assertEquals(0x8b, gz[1] & 0xff);
        // Decoded with the JDK's gzip reader, independent of PprofFiles.parse:
        try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(gz))) {
            assertArrayEquals(PROFILE.toByteArray(), in.readAllBytes());
        }
        assertEquals(PROFILE, PprofFiles.parse(gz));
    }

    @Test
    void parseAcceptsRawProtobuf() {
        byte[] raw = PROFILE.toByteArray();
        assertEquals(0x0a, raw[0] & 0xff, "raw profile starts with field 1 (sample_type), not gzip magic");
        assertEquals(PROFILE, PprofFiles.parse(raw));
        assertEquals(Profile.getDefaultInstance(), PprofFiles.parse(new byte[0]));
    }

    @Test
    void parseRejectsGarbage() {
        assertThrows(IllegalArgumentException.class, () -> PprofFiles.parse(new byte[] {0x1f, (byte) 0x8b, 1, 2, 3}));
        assertThrows(IllegalArgumentException.class, () -> PprofFiles.parse(new byte[] {(byte) 0xff, (byte) 0xff}));
    }

    @Test
    void writeAtomicallyCreatesDirectoriesAndLeavesNoTempFile(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("a/b/cpu.pb.gz");
        PprofFiles.writeAtomically(PROFILE, file);
        assertEquals(PROFILE, PprofFiles.parse(Files.readAllBytes(file)));
        assertEquals(List.of("cpu.pb.gz"), names(file.getParent()));
    }

    @Test
    void writeAtomicallyReplacesAnExistingFile(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("cpu.pb.gz");
        Files.writeString(file, "old contents, longer than nothing at all");
        Profile other = new ProfileBuilder(1, 5).build(6);
        PprofFiles.writeAtomically(other, file);
        assertArrayEquals(PprofFiles.gzip(other), Files.readAllBytes(file));
        PprofFiles.writeAtomically(PROFILE, file);
        assertEquals(PROFILE, PprofFiles.parse(Files.readAllBytes(file)));
        assertEquals(List.of("cpu.pb.gz"), names(dir));
    }

    @Test
    void failedWriteLeavesNoTempFile(@TempDir Path dir) throws Exception {
        Path target = dir.resolve("taken");
        Files.createDirectory(target);
        Files.writeString(target.resolve("x"), "a non-empty directory cannot be replaced by a file");
        assertThrows(java.io.IOException.class, () -> PprofFiles.writeAtomically(PROFILE, target));
        assertEquals(List.of("taken"), names(dir));
    }

    private static List<String> names(Path dir) throws Exception {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }
}
