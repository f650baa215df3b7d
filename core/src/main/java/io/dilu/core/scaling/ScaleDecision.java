package io.dilu.core.scaling;

/**
 * What the horizontal scaler wants.
 *
 * @param desired instance count to run
 * @param reason why, in words for events and logs
 */
public record ScaleDecision(int desired, Reason reason) {

    /** Why the count is what it is. */
    public enum Reason {
        /** Load stayed above what the running instances serve for φ_out samples. */
        SCALE_OUT,
        /** The demand of the burst window was beyond what the instances serve even at their SM limits. */
        BURST_OUT,
        /** Load stayed below what one instance fewer serves for more than φ_in samples. */
        SCALE_IN,
        /** Requests arrived while nothing ran. */
        ACTIVATE,
        /** Bursts shorter than φ_out seconds are left to vertical scaling. */
        HOLD,
        /** The count was outside min/max scale and was brought back. */
        BOUNDS;

        private final String label = name().toLowerCase(java.util.Locale.ROOT);

        /** The reason in lower case, as logs and events show it (made once: a decision names one every tick). */
        public String label() {
            return label;
        }
    }
}
