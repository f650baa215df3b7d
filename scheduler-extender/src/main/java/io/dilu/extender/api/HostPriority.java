package io.dilu.extender.api;

import com.fasterxml.jackson.annotation.JsonProperty;

/** One node's score from prioritize, 0..{@link #MAX_SCORE} ({@code MaxExtenderPriority}). */
public record HostPriority(@JsonProperty("Host") String host, @JsonProperty("Score") long score) {

    public static final long MAX_SCORE = 10;
}
