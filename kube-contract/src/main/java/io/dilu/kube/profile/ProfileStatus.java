package io.dilu.kube.profile;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import io.fabric8.kubernetes.api.model.Condition;
import java.util.List;

/**
 * What the profiler found: the settings, every trial in the order run, and conditions {@code Profiling},
 * {@code Ready} and {@code Failed}.
 *
 * @param observedGeneration the spec generation these settings are for
 * @param servingThroughputRps requests per second one instance serves at its request (inference)
 * @param searchTrials distinct trials the search ran (retries of one setting count once)
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
public record ProfileStatus(Long observedGeneration, List<Condition> conditions, Integer smRequest, Integer smLimit,
        Integer batchSize, Long memoryMiB, Double servingThroughputRps, Integer searchTrials, List<TrialRecord> trials) {}
