package dev.loupe.agent.unwind;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class RangeAllocatorTest {
    /** An allocator of {@code capacity} slots with {@code runs} taken one after another from 0. */
    private static RangeAllocator taken(int capacity, int... runs) {
        RangeAllocator a = new RangeAllocator(capacity);
        int start = 0;
        for (int n : runs) {
            assertEquals(start, a.allocate(n), "first fit from an empty space is consecutive");
            start += n;
        }
        return a;
    }

    @Test
    void firstFitTakesTheLowestHoleLargeEnough() {
        RangeAllocator a = taken(100, 10, 20, 10, 5);
        a.release(0, 10);  // hole [0, 10)
        a.release(30, 10); // hole [30, 40)
        assertEquals(45, a.allocate(12), "neither 10-slot hole holds 12: the free tail does");
        assertEquals(0, a.allocate(7), "the lowest hole that fits");
        assertEquals(7, a.allocate(3), "what is left of it");
        assertEquals(30, a.allocate(10));
        assertEquals(10 + 20 + 10 + 5 - 10 - 10 + 12 + 7 + 3 + 10, a.used());
    }

    @Test
    void aFragmentedSpaceRefusesARunLargerThanEveryHoleUntilFreesCoalesce() {
        RangeAllocator a = taken(40, 10, 10, 10, 10);
        a.release(10, 10);
        a.release(30, 10);
        assertEquals(20, 40 - a.used(), "20 slots free");
        assertEquals(-1, a.allocate(15), "but in two runs of 10");
        a.release(20, 10); // joins [10, 20) and [30, 40) into [10, 40)
        assertEquals(10, a.allocate(30));
        assertEquals(-1, a.allocate(1));
        a.release(0, 10);
        a.release(10, 30); // joins [0, 10) with it: the whole space again
        assertEquals(0, a.used());
        assertEquals(0, a.allocate(40));
    }

    @Test
    void zeroSlotsTakeNothing() {
        RangeAllocator a = taken(5, 5);
        assertEquals(0, a.allocate(0), "a table without rules gets an empty slice, even when full");
        a.release(0, 0);
        assertEquals(5, a.used());
        assertEquals(-1, a.allocate(1));
    }
}
