package io.dilu.extender.api;

import com.fasterxml.jackson.annotation.JsonProperty;

/** The body of a 4xx/5xx answer: {@code Error}, the field name kube-scheduler's result types use for the reason. */
public record ErrorAnswer(@JsonProperty("Error") String error) {}
