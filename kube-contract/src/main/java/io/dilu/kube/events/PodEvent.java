package io.dilu.kube.events;

import java.util.Objects;

/**
 * Something a Dilu component tells about a pod through a Kubernetes Event ({@code kubectl describe pod} shows it).
 *
 * @param namespace the pod's namespace
 * @param pod the pod's name
 * @param uid the pod's UID, or empty when the component does not know it (kubectl describe matches events by UID,
 *     so one without is listed by {@code kubectl get events} only)
 * @param type Normal or Warning
 * @param reason a CamelCase word, the same for every event of one kind ({@code DiluPlaced}, …)
 * @param message what happened, for a person
 */
public record PodEvent(String namespace, String pod, String uid, Type type, String reason, String message) {

    /** The two types Kubernetes knows. */
    public enum Type {
        NORMAL("Normal"),
        WARNING("Warning");

        private final String value;

        Type(String value) {
            this.value = value;
        }

        /** As the Event's {@code type} field has it. */
        public String value() {
            return value;
        }
    }

    public PodEvent {
        Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(pod, "pod");
        uid = uid == null ? "" : uid;
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(reason, "reason");
        Objects.requireNonNull(message, "message");
    }

    public static PodEvent normal(String namespace, String pod, String uid, String reason, String message) {
        return new PodEvent(namespace, pod, uid, Type.NORMAL, reason, message);
    }

    public static PodEvent warning(String namespace, String pod, String uid, String reason, String message) {
        return new PodEvent(namespace, pod, uid, Type.WARNING, reason, message);
    }
}
