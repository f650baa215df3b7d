package io.dilu.extender.api;

import java.util.regex.Pattern;

/**
 * A request body kube-scheduler would never send: answered with HTTP 400 and this message, which names the field
 * and what it must be. Every body is treated as hostile until it has passed these checks.
 */
public final class InvalidRequest extends RuntimeException {

    /** A Kubernetes object name (DNS-1123 subdomain): also keeps control characters out of logs and messages. */
    private static final Pattern NAME = Pattern.compile("[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?");
    private static final String NAME_RULE = "must be a Kubernetes object name (1..253 of a-z, 0-9, '-', '.')";
    private static final Pattern UID = Pattern.compile("[-0-9A-Za-z]{1,128}");

    public InvalidRequest(String message) {
        super(message, null, false, false); // the message is the whole story: no stack trace to fill or leak
    }

    static String name(String value, String field) {
        if (value == null || value.isEmpty()) {
            throw new InvalidRequest(field + " is missing; it " + NAME_RULE);
        }
        if (!NAME.matcher(value).matches()) {
            throw new InvalidRequest(field + " " + NAME_RULE);
        }
        return value;
    }

    static String uid(String value, String field) {
        if (value == null || value.isEmpty()) {
            throw new InvalidRequest(field + " is missing; it must be the pod's UID (1..128 of A-Z, a-z, 0-9, '-')");
        }
        if (!UID.matcher(value).matches()) {
            throw new InvalidRequest(field + " must be a pod UID (1..128 of A-Z, a-z, 0-9, '-')");
        }
        return value;
    }

    static <T> T present(T value, String field) {
        if (value == null) {
            throw new InvalidRequest(field + " is missing");
        }
        return value;
    }
}
