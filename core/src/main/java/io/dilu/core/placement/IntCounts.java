package io.dilu.core.placement;

import java.util.Arrays;

/**
 * Counts by small non-negative int keys (GPU ordinals, function ids): open addressing with linear probing, no
 * boxing, iteration over a dense array of the keys present. What {@link ClusterState}'s affinity index is made of,
 * so that a placement decision walks int arrays instead of hash maps of boxed integers.
 */
final class IntCounts {

    private static final int EMPTY = -1;

    private int[] slots;
    private int[] counts;
    /** Position of each key in {@link #keys}, by slot. */
    private int[] position;
    private int[] keys;
    private int size;

    IntCounts(int expected) {
        int capacity = Integer.highestOneBit(Math.max(4, expected * 2 - 1)) << 1;
        slots = new int[capacity];
        counts = new int[capacity];
        position = new int[capacity];
        Arrays.fill(slots, EMPTY);
        keys = new int[Math.max(2, expected)];
    }

    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    /** The i-th key present, 0 ≤ i < size; the order changes when keys are removed. */
    int key(int i) {
        return keys[i];
    }

    int count(int key) {
        int s = find(key);
        return s < 0 ? 0 : counts[s];
    }

    boolean contains(int key) {
        return find(key) >= 0;
    }

    /** Adds {@code delta} to the count of {@code key}; a count that reaches 0 removes the key. Returns the new count. */
    int add(int key, int delta) {
        int s = find(key);
        if (s >= 0) {
            counts[s] += delta;
            if (counts[s] <= 0) {
                remove(s);
                return 0;
            }
            return counts[s];
        }
        if (delta <= 0) {
            return 0;
        }
        if ((size + 1) * 2 > slots.length) {
            grow();
        }
        s = insertSlot(key);
        counts[s] = delta;
        if (size == keys.length) {
            keys = Arrays.copyOf(keys, size * 2);
        }
        keys[size] = key;
        position[s] = size++;
        return delta;
    }

    private int mask() {
        return slots.length - 1;
    }

    private static int hash(int key) {
        int h = key * 0x9E3779B9;
        return h ^ (h >>> 16);
    }

    private int find(int key) {
        int m = mask();
        for (int s = hash(key) & m; ; s = (s + 1) & m) {
            if (slots[s] == key) {
                return s;
            }
            if (slots[s] == EMPTY) {
                return -1;
            }
        }
    }

    private int insertSlot(int key) {
        int m = mask();
        int s = hash(key) & m;
        while (slots[s] != EMPTY) {
            s = (s + 1) & m;
        }
        slots[s] = key;
        return s;
    }

    private void remove(int s) {
        // Keep the key array dense: the last key takes the removed one's place.
        int p = position[s];
        int last = keys[--size];
        if (p != size) {
            keys[p] = last;
            position[find(last)] = p;
        }
        // Backward-shift deletion keeps every probe sequence unbroken without tombstones.
        int m = mask();
        int hole = s;
        for (int next = (hole + 1) & m; slots[next] != EMPTY; next = (next + 1) & m) {
            int home = hash(slots[next]) & m;
            boolean movable = hole <= next ? home <= hole || home > next : home <= hole && home > next;
            if (movable) {
                slots[hole] = slots[next];
                counts[hole] = counts[next];
                position[hole] = position[next];
                hole = next;
            }
        }
        slots[hole] = EMPTY;
        counts[hole] = 0;
    }

    private void grow() {
        int[] oldSlots = slots;
        int[] oldCounts = counts;
        int[] oldPosition = position;
        slots = new int[oldSlots.length * 2];
        counts = new int[slots.length];
        position = new int[slots.length];
        Arrays.fill(slots, EMPTY);
        for (int s = 0; s < oldSlots.length; s++) {
            if (oldSlots[s] != EMPTY) {
                int t = insertSlot(oldSlots[s]);
                counts[t] = oldCounts[s];
                position[t] = oldPosition[s];
            }
        }
    }
}
