package io.dilu.core.placement;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

/** The affinity index's counts agree with a map of boxed integers, whatever is added and removed. */
class IntCountsTest {

    @Property(tries = 200)
    void agreesWithAHashMap(@ForAll long seed) {
        Random rnd = new Random(seed);
        IntCounts counts = new IntCounts(1 + rnd.nextInt(8));
        Map<Integer, Integer> expected = new HashMap<>();
        int keys = 1 + rnd.nextInt(200);
        for (int step = 0; step < 2_000; step++) {
            int key = rnd.nextInt(keys) * (rnd.nextBoolean() ? 1 : 4093); // clustered and spread keys
            int delta = rnd.nextInt(3) == 0 ? -expected.getOrDefault(key, 0) : rnd.nextInt(5) - 2;
            int now = Math.max(0, expected.getOrDefault(key, 0) + delta);
            if (expected.containsKey(key) || delta > 0) {
                if (now == 0) {
                    expected.remove(key);
                } else {
                    expected.put(key, now);
                }
            }
            assertThat(counts.add(key, delta)).isEqualTo(expected.getOrDefault(key, 0));
        }
        assertThat(counts.size()).isEqualTo(expected.size());
        Set<Integer> listed = new HashSet<>();
        for (int i = 0; i < counts.size(); i++) {
            listed.add(counts.key(i));
        }
        assertThat(listed).isEqualTo(expected.keySet());
        expected.forEach((k, v) -> assertThat(counts.count(k)).isEqualTo(v));
        assertThat(counts.count(-7)).isZero();
    }
}
