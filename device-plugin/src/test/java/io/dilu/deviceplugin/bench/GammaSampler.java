package io.dilu.deviceplugin.bench;

import java.util.SplittableRandom;

/**
 * Gamma(shape, 1) variates by Marsaglia and Tsang's method ("A simple method for generating gamma variables",
 * ACM TOMS 26(3), 2000), with the shape < 1 boost Gamma(a) = Gamma(a + 1) · U^(1/a) from the same paper.
 */
final class GammaSampler {

    private GammaSampler() {}

    static double next(SplittableRandom random, double shape) {
        if (!(shape > 0)) {
            throw new IllegalArgumentException("shape must be > 0, got " + shape);
        }
        if (shape < 1) {
            double u = 1 - random.nextDouble(); // (0, 1]
            return next(random, shape + 1) * Math.pow(u, 1 / shape);
        }
        double d = shape - 1.0 / 3, c = 1 / Math.sqrt(9 * d);
        while (true) {
            double x, v;
            do {
                x = gaussian(random);
                v = 1 + c * x;
            } while (v <= 0);
            v = v * v * v;
            double u = 1 - random.nextDouble();
            if (u < 1 - 0.0331 * x * x * x * x || Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) {
                return d * v;
            }
        }
    }

    private static double gaussian(SplittableRandom random) {
        // Box–Muller: two uniforms, one normal (the second is not kept; speed does not matter here).
        double u1 = 1 - random.nextDouble(), u2 = random.nextDouble();
        return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
    }
}
