package io.dilu.kube.profile;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;

/**
 * A profile's spec: either settings written by hand ({@code smRequest}, {@code memoryMiB}, …), or what the
 * profiler needs to find them ({@code image}, {@code command}, {@code sloMillis} for inference,
 * {@code maxBatchSize}). Numbers are boxed: absent is not zero.
 *
 * @param type {@code inference} (default), {@code llm-inference} or {@code training}
 * @param image the function's image, run by each trial
 * @param command the trial's command (the image's entrypoint when absent)
 * @param servingThroughputRpsAtLimit requests per second one instance serves at its SM limit (by hand; at least
 *     {@code servingThroughputRps})
 * @param maxBatchSize the largest batch the search may try (batches 1, 2, 4, … up to it; default the paper's, {@code
 *     HybridGrowthSearch.Steps.PAPER})
 * @param trials hand-written record of the trials behind hand-written settings
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
public record ProfileSpec(String function, String type, Integer smRequest, Integer smLimit, Long memoryMiB,
        Integer batchSize, String priority, Double klcThreshold, Integer sloMillis, Double servingThroughputRps,
        Double servingThroughputRpsAtLimit, Integer gpus, List<TrialRecord> trials, String image, List<String> command, Integer maxBatchSize) {

    /** A spec the profiler works from: function, image and, for inference, the SLO. */
    public static ProfileSpec toProfile(String function, String type, String image, List<String> command,
            Integer sloMillis, Integer maxBatchSize) {
        return new ProfileSpec(function, type, null, null, null, null, null, null, sloMillis, null, null, null, null, image,
                command, maxBatchSize);
    }

    /** Settings written by a person: nothing to profile. */
    @JsonIgnore
    public boolean handWritten() {
        return smRequest != null;
    }

    @JsonIgnore
    public boolean training() {
        return "training".equals(type);
    }

    @JsonIgnore
    public boolean llm() {
        return "llm-inference".equals(type);
    }
}
