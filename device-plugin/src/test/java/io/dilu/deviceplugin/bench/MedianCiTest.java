package io.dilu.deviceplugin.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class MedianCiTest {

    private static List<Double> oneTo(int n) {
        List<Double> values = new ArrayList<>(IntStream.rangeClosed(1, n).mapToObj(i -> (double) i).toList());
        Collections.shuffle(values, new java.util.Random(n)); // the order runs came in does not matter
        return values;
    }

    @Test
    void elevenValuesGiveTheSecondSmallestAndSecondLargest() {
        MedianCi ci = MedianCi.of(oneTo(11));
        assertThat(ci.median()).isEqualTo(6);
        // P(B ≤ 1) = 12/2048 ≤ 0.025 < P(B ≤ 2) = 67/2048: ranks 2 and 10, coverage 1 - 24/2048.
        assertThat(ci.low()).isEqualTo(2);
        assertThat(ci.high()).isEqualTo(10);
        assertThat(ci.coverage()).isCloseTo(1 - 24.0 / 2048, within(1e-12));
        assertThat(ci.halfWidth()).isEqualTo(4);
    }

    @Test
    void moreValuesNarrowTheRanksTowardsTheMiddle() {
        // n = 20: P(B ≤ 5) = 0.0207, P(B ≤ 6) = 0.0577, so ranks 6 and 15; the median of an even count is the mean.
        MedianCi ci = MedianCi.of(oneTo(20));
        assertThat(ci.median()).isEqualTo(10.5);
        assertThat(ci.low()).isEqualTo(6);
        assertThat(ci.high()).isEqualTo(15);
        assertThat(ci.coverage()).isGreaterThanOrEqualTo(MedianCi.LEVEL);
    }

    @Test
    void tooFewValuesForNinetyFivePercentSpanTheRangeAndSaySo() {
        MedianCi ci = MedianCi.of(oneTo(5));
        assertThat(ci.low()).isEqualTo(1);
        assertThat(ci.high()).isEqualTo(5);
        assertThat(ci.coverage()).isCloseTo(1 - 2.0 / 32, within(1e-12)).isLessThan(MedianCi.LEVEL);
        assertThatThrownBy(() -> MedianCi.of(List.of())).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void binomialTailsMatchTheirCounts() {
        assertThat(MedianCi.binomialCdf(11, 2)).isCloseTo(67.0 / 2048, within(1e-15));
        assertThat(MedianCi.binomialCdf(4, 4)).isCloseTo(1, within(1e-15));
    }
}
