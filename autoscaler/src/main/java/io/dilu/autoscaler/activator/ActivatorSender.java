package io.dilu.autoscaler.activator;

import java.util.Objects;
import java.util.Optional;

/**
 * Who a connection comes from, as far as the autoscaler could tell when it was opened: an activator pod, by name, or a
 * sender that was not checked (authentication {@code none}).
 *
 * @param pod the activator pod whose address the connection comes from; empty when unchecked
 */
public record ActivatorSender(Optional<String> pod) {

    public ActivatorSender {
        Objects.requireNonNull(pod, "pod");
    }

    /** An activator pod, found by the connection's source address. */
    public static ActivatorSender pod(String name) {
        return new ActivatorSender(Optional.of(name));
    }

    /** Anyone: authentication is off. */
    public static ActivatorSender unchecked() {
        return new ActivatorSender(Optional.empty());
    }

    @Override
    public String toString() {
        return pod.map(p -> "activator pod " + p).orElse("an unchecked sender");
    }
}
