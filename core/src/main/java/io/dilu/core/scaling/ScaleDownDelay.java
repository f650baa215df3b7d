package io.dilu.core.scaling;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Knative's {@code scale-down-delay}: the scale applied is the highest one wanted during the last delay, so a
 * lower one takes effect only once it has been wanted that long, and a higher one at once. Deterministic in the
 * times passed in; keeps one entry per distinct wanted scale within the delay.
 */
public final class ScaleDownDelay {

    private record Wanted(Instant at, int scale) {}

    /** Decreasing scales, each the highest wanted since its time: the head is the highest within the delay. */
    private final Deque<Wanted> recent = new ArrayDeque<>();

    /** Records what is wanted at {@code now} and returns the scale to apply. */
    public int apply(Instant now, int wanted, Duration delay) {
        while (!recent.isEmpty() && recent.peekLast().scale() <= wanted) {
            recent.pollLast();
        }
        recent.addLast(new Wanted(now, wanted));
        while (recent.size() > 1 && !recent.peekFirst().at().isAfter(now.minus(delay))) {
            recent.pollFirst();
        }
        return recent.peekFirst().scale();
    }
}
