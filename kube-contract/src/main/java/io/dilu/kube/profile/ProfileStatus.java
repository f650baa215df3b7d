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
 * @param servingThroughputRpsAtLimit requests per second one instance serves at its limit, same batch (inference):
 *     how much of a burst vertical scaling can take; absent when unknown
 * @param searchTrials distinct trials run (retries of one setting count once; the one at the limit counts)
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
public record ProfileStatus(Long observedGeneration, List<Condition> conditions, Integer smRequest, Integer smLimit,
        Integer batchSize, Long memoryMiB, Double servingThroughputRps, Double servingThroughputRpsAtLimit, Integer searchTrials,
        List<TrialRecord> trials) {}
