package dev.loupe.unwinder.proc;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

class FileKeyTest {
    @TempDir
    Path dir;

    /** glibc's makedev: minor's low byte, major's low 12 bits, then minor's and major's high bits. */
    @Test
    void devicesAreEncodedAsStatReportsThem() {
        assertEquals(0x801, FileKey.device(8, 1)); // sda1
        assertEquals(0xfe00, FileKey.device(254, 0)); // vda
        assertEquals(0x10305, FileKey.device(259, 5)); // nvme0n1p5
        assertEquals(0x1000_5672_3489L, FileKey.device(0x1234, 0x56789));
    }

    /** A rename over the path, an in-place rewrite of another size, a touch: each is another file. */
    @Test
    void aChangedFileIsAnotherKey() throws Exception {
        Path f = Files.writeString(dir.resolve("app"), "one");
        FileKey first = FileKey.of(f).orElseThrow();
        assertEquals(first, FileKey.of(f).orElseThrow());
        Files.writeString(f, "three");
        FileKey rewritten = FileKey.of(f).orElseThrow();
        assertNotEquals(first, rewritten);
        assertEquals(first.inode(), rewritten.inode());
        Files.setLastModifiedTime(f, FileTime.fromMillis(Files.getLastModifiedTime(f).toMillis() + 1));
        assertNotEquals(rewritten, FileKey.of(f).orElseThrow());
        Path renamed = Files.writeString(dir.resolve("app.new"), "three");
        Files.setLastModifiedTime(renamed, Files.getLastModifiedTime(f));
        Files.move(renamed, f, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        assertNotEquals(rewritten.inode(), FileKey.of(f).orElseThrow().inode());
        assertEquals(Optional.empty(), FileKey.of(dir.resolve("missing")));
    }

    /** The key of a mapping (maps line plus attributes) is the key of its path, where the maps line names the inode stat does. */
    @Test
    void aMappedFileHasTheKeyOfItsPath() throws Exception {
        MapEntry libjvm = ProcMaps.read(Path.of("/proc"), (int) ProcessHandle.current().pid()).stream()
                .filter(m -> m.path().endsWith("/libjvm.so") && m.fileBacked()).findFirst().orElseThrow();
        Path path = Path.of(libjvm.path());
        FileKey byPath = FileKey.of(path).orElseThrow();
        assertEquals(libjvm.inode(), byPath.inode(), "maps and stat name the same inode (not so on an overlay file system)");
        assertEquals(byPath, FileKey.of(libjvm, Files.readAttributes(path, BasicFileAttributes.class)));
    }
}
