package io.dilu.deviceplugin.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class GammaSamplerTest {

    @Test
    void meanAndVarianceMatchTheShape() {
        for (double shape : new double[] {1.0 / 16, 0.25, 1, 4}) {
            SplittableRandom random = new SplittableRandom(1);
            int n = 200_000;
            double sum = 0, squares = 0;
            for (int i = 0; i < n; i++) {
                double x = GammaSampler.next(random, shape);
                sum += x;
                squares += x * x;
            }
            double mean = sum / n, variance = squares / n - mean * mean;
            assertThat(mean).as("mean of Gamma(%s)", shape).isCloseTo(shape, org.assertj.core.data.Percentage.withPercentage(5));
            assertThat(variance).as("variance of Gamma(%s)", shape).isCloseTo(shape, org.assertj.core.data.Percentage.withPercentage(15));
        }
    }
}
