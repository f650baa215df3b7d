package io.dilu.core.tokens;

/**
 * Tokens issued to one instance for the next period.
 *
 * @param id the instance
 * @param tokens thread blocks it may launch during the period
 */
public record TokenGrant(String id, long tokens) {}
