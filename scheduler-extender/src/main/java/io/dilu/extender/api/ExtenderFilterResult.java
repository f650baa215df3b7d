package io.dilu.extender.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import java.util.Map;

/**
 * The filter answer: the nodes that pass, and for each other candidate the reason the user reads in
 * {@code kubectl describe pod}. A non-empty {@code Error} fails the scheduling attempt (it is retried).
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ExtenderFilterResult(
        @JsonProperty("NodeNames") List<String> nodeNames,
        @JsonProperty("FailedNodes") Map<String, String> failedNodes,
        @JsonProperty("Error") String error) {

    public static ExtenderFilterResult error(String message) {
        return new ExtenderFilterResult(null, null, message);
    }
}
