package io.dilu.core.scaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class KnativeMetricWindowTest {

    private static final Instant T0 = Instant.ofEpochSecond(1_000);

    @Test
    void averagesOverTheSecondsSinceDataBeganUntilTheWindowIsFull() {
        KnativeMetricWindow w = new KnativeMetricWindow(Duration.ofSeconds(60));
        w.record(T0, 35);
        assertThat(w.average(Duration.ofSeconds(60), T0)).as("one second of data is the whole average").isEqualTo(35);
        w.record(T0.plusSeconds(1), 5);
        assertThat(w.average(Duration.ofSeconds(60), T0.plusSeconds(1))).isEqualTo(20);
        assertThat(w.average(Duration.ofSeconds(1), T0.plusSeconds(1))).isEqualTo(5);
    }

    @Test
    void secondsWithoutAWriteCountAsZeroAndOldDataLeavesTheWindow() {
        KnativeMetricWindow w = new KnativeMetricWindow(Duration.ofSeconds(10));
        for (int s = 0; s < 10; s++) {
            w.record(T0.plusSeconds(s), 10);
        }
        assertThat(w.average(Duration.ofSeconds(10), T0.plusSeconds(9))).isEqualTo(10);
        assertThat(w.average(Duration.ofSeconds(10), T0.plusSeconds(14))).as("five silent seconds").isEqualTo(5);
        assertThat(w.average(Duration.ofSeconds(10), T0.plusSeconds(19))).isZero();
    }

    @Test
    void aWholeWindowWithoutDataStartsTheAverageOver() {
        KnativeMetricWindow w = new KnativeMetricWindow(Duration.ofSeconds(10));
        w.record(T0, 100);
        w.record(T0.plusSeconds(30), 4);
        assertThat(w.average(Duration.ofSeconds(10), T0.plusSeconds(30))).isEqualTo(4);
        assertThat(w.average(Duration.ofSeconds(10), T0.plusSeconds(31))).isEqualTo(2);
    }

    @Test
    void refusesWhatIsNoMetric() {
        KnativeMetricWindow w = new KnativeMetricWindow(Duration.ofSeconds(10));
        assertThatThrownBy(() -> w.record(T0, Double.NaN)).hasMessageContaining("finite");
        assertThatThrownBy(() -> w.record(T0, -1)).hasMessageContaining(">= 0");
        assertThatThrownBy(() -> new KnativeMetricWindow(Duration.ZERO)).hasMessageContaining("1s..1h");
    }
}
