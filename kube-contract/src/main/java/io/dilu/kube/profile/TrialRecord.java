package io.dilu.kube.profile;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * One profiling trial as recorded in a profile.
 *
 * @param smPercent the trial's pinned SM share (request = limit)
 * @param latencyMillis one batch (or training iteration), as the workload measured it
 * @param throughput requests (or iterations) per second
 * @param memoryMiB GPU memory the workload reported
 * @param pod the pod that ran it
 * @param gpu the model of the GPU it ran on (an emulated one says so)
 * @param error why no measurement came back from any attempt (the search counts the setting as missing the SLO)
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
public record TrialRecord(Integer smPercent, Integer batchSize, Double latencyMillis, Double throughput, Long memoryMiB,
        String pod, String gpu, String error) {}
