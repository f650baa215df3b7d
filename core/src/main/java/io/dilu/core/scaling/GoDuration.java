package io.dilu.core.scaling;

import io.dilu.core.quota.FieldError;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Durations as Knative's annotations write them, in Go's {@code time.ParseDuration} form: decimal numbers, each
 * with a unit ({@code ns}, {@code us}, {@code µs}, {@code ms}, {@code s}, {@code m}, {@code h}), e.g.
 * {@code 60s}, {@code 1m30s}, {@code 1.5h}; {@code 0} alone is zero. No sign: no Knative knob is negative.
 */
public final class GoDuration {

    private static final Pattern PART = Pattern.compile("(\\d+(?:\\.\\d*)?|\\.\\d+)(ns|us|µs|ms|s|m|h)");
    private static final Map<String, Long> NANOS = Map.of("ns", 1L, "us", 1_000L, "µs", 1_000L, "ms", 1_000_000L,
            "s", 1_000_000_000L, "m", 60_000_000_000L, "h", 3_600_000_000_000L);

    private GoDuration() {}

    /**
     * A knob's duration within {@code [min, max]} (and in whole seconds if asked); otherwise empty, with the
     * knob reported naming it and {@code allowed}.
     */
    static Optional<Duration> within(String key, String text, Duration min, Duration max, boolean wholeSeconds,
            String allowed, List<FieldError> problems) {
        try {
            Duration d = parse(text);
            if (d.compareTo(min) >= 0 && d.compareTo(max) <= 0 && (!wholeSeconds || d.getNano() == 0)) {
                return Optional.of(d);
            }
        } catch (IllegalArgumentException e) {
            // reported below
        }
        problems.add(new FieldError(key, text, allowed));
        return Optional.empty();
    }

    /** @throws IllegalArgumentException when {@code text} is not such a duration (or passes 100,000 hours) */
    public static Duration parse(String text) {
        String t = text == null ? "" : text.strip();
        if (t.equals("0")) {
            return Duration.ZERO;
        }
        Matcher m = PART.matcher(t);
        BigDecimal nanos = BigDecimal.ZERO;
        int at = 0;
        while (at < t.length() && m.find(at) && m.start() == at) {
            nanos = nanos.add(new BigDecimal(m.group(1)).multiply(BigDecimal.valueOf(NANOS.get(m.group(2)))));
            at = m.end();
        }
        if (t.isEmpty() || at != t.length()) {
            throw new IllegalArgumentException("'" + t + "' is not a duration like 60s, 1m30s or 1.5h");
        }
        if (nanos.compareTo(BigDecimal.valueOf(360_000_000_000_000_000L)) > 0) {
            throw new IllegalArgumentException("'" + t + "' is longer than 100000h");
        }
        return Duration.ofNanos(nanos.longValue());
    }
}
