package io.dilu.core.placement;

/** One GPU's part of a placement: which GPU and how much of it. */
public record Slot(String gpuUuid, int requestMilli, int limitMilli, long memoryMib) {}
