package io.dilu.core.tokens;

/**
 * Tokens issued to one instance for the next period.
 *
 * @param id the instance
 * @param tokens thread blocks it may launch during the period
 * @param yields whether its launches wait for the launch cycles of the GPU's busy SLO instances and for its own
 *     earlier kernels ({@link TokenController}: tokens set a rate, not an order, and a GPU runs kernels in launch
 *     order)
 */
public record TokenGrant(String id, long tokens, boolean yields) {

    /** A grant whose launches need not wait for anyone. */
    public TokenGrant(String id, long tokens) {
        this(id, tokens, false);
    }
}
