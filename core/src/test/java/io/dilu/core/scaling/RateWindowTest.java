package io.dilu.core.scaling;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.TreeMap;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

class RateWindowTest {

    static final Instant T0 = Instant.parse("2026-11-28T10:00:00Z");

    /**
     * Whatever the order of the records — a scrape every second, seconds missed, a second recorded twice, one
     * recorded late — the window holds the latest rate of each second of the last {@code size}, and nothing else.
     */
    @Property(tries = 2000)
    void theWindowHoldsTheLatestRateOfEachOfItsSeconds(
            @ForAll @Size(max = 120) List<@IntRange(min = -3, max = 3) Integer> steps,
            @ForAll @IntRange(min = 1, max = 12) int size,
            @ForAll @IntRange(min = 0, max = 3) int lookAhead) {
        RateWindow window = new RateWindow(size);
        TreeMap<Long, Double> latest = new TreeMap<>();
        long second = 0;
        long newest = 0;
        for (int i = 0; i < steps.size(); i++) {
            // Mostly the next second; sometimes a gap, a repeat or a second back.
            second = Math.max(0, second + (steps.get(i) == 0 ? 1 : steps.get(i)));
            window.record(T0.plusSeconds(second), i);
            latest.put(second, (double) i);
            newest = Math.max(newest, second);
        }
        long now = newest + lookAhead;
        double[] expected = latest.subMap(now - size + 1, true, now, true).values().stream()
                .mapToDouble(Double::doubleValue).sorted().toArray();
        double[] samples = window.samples(T0.plusSeconds(now));
        Arrays.sort(samples);
        assertThat(samples).containsExactly(expected);
    }
}
