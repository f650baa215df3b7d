package io.dilu.extender.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;

/** The bind answer; a non-empty {@code Error} makes the scheduler forget its assumption and retry the pod. */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ExtenderBindingResult(@JsonProperty("Error") String error) {

    public static final ExtenderBindingResult OK = new ExtenderBindingResult(null);
}
