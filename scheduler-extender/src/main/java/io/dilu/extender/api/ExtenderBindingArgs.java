package io.dilu.extender.api;

import com.fasterxml.jackson.annotation.JsonProperty;

/** What kube-scheduler sends to bind a pod through the extender. */
public record ExtenderBindingArgs(
        @JsonProperty("PodName") String podName,
        @JsonProperty("PodNamespace") String podNamespace,
        @JsonProperty("PodUID") String podUid,
        @JsonProperty("Node") String node) {}
