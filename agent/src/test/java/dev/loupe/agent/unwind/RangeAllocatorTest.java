package dev.loupe.agent.unwind;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.SplittableRandom;

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

    /**
     * The first free run of {@code n} slots in a bitmap of taken slots: what first fit must answer. */
    private static int firstFit(BitSet taken, int capacity, int n) {
        int start = taken.nextClearBit(0);
        while (start + n <= capacity) {
            int next = taken.nextSetBit(start);
            if (next < 0 || next - start >= n) {
                return start;
            }
            start = taken.nextClearBit(next);
        }
        return -1;
    }

    /**
     * Churn as many short processes make it (slices of 1 to 40 slots taken and given back in random order, the
     * space kept mostly full so it fragments into many holes): every answer is exactly first fit over a bitmap of
     * what is taken, so no slot is ever handed out twice or lost. Taking a hole used to read its length after
     * removing it from the tree, which for an inner node of the tree is the next hole's length (TreeMap moves its
     * successor into the removed entry): slots leaked, or were handed out twice, until a space with a few hundred
     * slots in use said "no room" for 5.
     */
    @Test
    void churnNeverLosesNorDoublesASlot() {
        int capacity = 4096;
        RangeAllocator a = new RangeAllocator(capacity);
        BitSet taken = new BitSet(capacity);
        List<int[]> live = new ArrayList<>();
        SplittableRandom random = new SplittableRandom(25);
        int allocations = 0;
        for (int step = 0; step < 200_000; step++) {
            boolean allocate = live.isEmpty() || (a.used() < capacity * 0.9 && random.nextInt(100) < 55);
            if (allocate) {
                int n = 1 + random.nextInt(40);
                int expected = firstFit(taken, capacity, n);
                int got = a.allocate(n);
                assertEquals(expected, got, "step " + step + ": first fit of " + n + " slots");
                if (got >= 0) {
                    taken.set(got, got + n);
                    live.add(new int[] {got, n});
                    allocations++;
                }
            } else {
                int[] r = live.remove(random.nextInt(live.size()));
                a.release(r[0], r[1]);
                taken.clear(r[0], r[0] + r[1]);
            }
            assertEquals(taken.cardinality(), a.used(), "step " + step);
        }
        assertEquals(true, allocations > 50_000, "the churn allocated: " + allocations);
        for (int[] r : live) {
            a.release(r[0], r[1]);
        }
        assertEquals(0, a.used());
        assertEquals(0, a.allocate(capacity), "every slot came back, in one run");
    }
}
