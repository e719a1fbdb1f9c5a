package dev.loupe.agent.jvm;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProcStatusTest {
    /** Lines of a JDK 25 JVM's status, default flags (recorded on this machine's kernel). */
    private static String status(String sigCgt, String nsPid) {
        return "Name:\tjava\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t11158\nNgid:\t0\nPid:\t11158\nPPid:\t1\n"
                + "TracerPid:\t0\nUid:\t1000\t1001\t1002\t1003\nGid:\t2000\t2001\t2002\t2003\nFDSize:\t256\n"
                + (nsPid == null ? "" : "NSpid:\t" + nsPid + "\n")
                + "SigQ:\t1/96365\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\nSigBlk:\t0000000000000000\n"
                + "SigIgn:\t0000000000000002\nSigCgt:\t" + sigCgt + "\nCapInh:\t0000000000000000\n";
    }

    @Test
    void aJvmWithDefaultFlagsCatchesSigquit() {
        ProcStatus s = ProcStatus.parse(11158, status("0000000101005ccd", "11158"));
        assertTrue(s.catches(Sigquit.SIGQUIT));
        assertTrue(s.catches(1)); // SIGHUP: bit 0
        assertTrue(s.catches(15)); // SIGTERM: bit 14 (0x4000)
        assertFalse(s.catches(2)); // SIGINT: bit 1, ignored here, not caught
    }

    @Test
    void aJvmWithXrsDoesNotCatchSigquit() {
        // The same JDK with -Xrs: bit 2 (signal 3) clear, the rest as before.
        ProcStatus s = ProcStatus.parse(11180, status("0000000101001cc8", "11180"));
        assertFalse(s.catches(Sigquit.SIGQUIT));
        assertEquals(0x101001cc8L, s.sigCgt());
    }

    @Test
    void signalNIsBitNMinusOne() {
        for (int sig = 1; sig <= 64; sig++) {
            ProcStatus only = new ProcStatus(0, 0, 1L << (sig - 1), 1);
            for (int other = 1; other <= 64; other++) {
                assertEquals(other == sig, only.catches(other), sig + " vs " + other);
            }
        }
        assertTrue(new ProcStatus(0, 0, ProcStatus.parseMask("ffffffffffffffff"), 1).catches(64));
        assertThrows(IllegalArgumentException.class, () -> new ProcStatus(0, 0, 0, 1).catches(0));
        assertThrows(IllegalArgumentException.class, () -> new ProcStatus(0, 0, 0, 1).catches(65));
    }

    @Test
    void masksAreSixteenHexDigits() {
        assertEquals(4L, ProcStatus.parseMask("0000000000000004"));
        assertEquals(-1L, ProcStatus.parseMask("ffffffffffffffff"));
        assertThrows(IllegalArgumentException.class, () -> ProcStatus.parseMask(""));
        assertThrows(IllegalArgumentException.class, () -> ProcStatus.parseMask("10000000000000000"));
        assertThrows(NumberFormatException.class, () -> ProcStatus.parseMask("000000000000000g"));
    }

    @Test
    void effectiveIdsAreTheSecondFields() {
        ProcStatus s = ProcStatus.parse(11158, status("0", "11158"));
        assertEquals(1001, s.euid());
        assertEquals(2001, s.egid());
    }

    @Test
    void theNamespacePidIsTheLastNspidField() {
        assertEquals(7, ProcStatus.parse(4321, status("0", "4321\t7")).nsPid());
        assertEquals(4321, ProcStatus.parse(4321, status("0", "4321")).nsPid());
        assertEquals(4321, ProcStatus.parse(4321, status("0", null)).nsPid()); // kernels before 4.1
    }

    @Test
    void aStatusWithoutTheLinesIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> ProcStatus.parse(1, "Name:\tx\nUid:\t0\t0\t0\t0\n"));
    }
}
