package io.dilu.loadgen;

/** How one request of a load run ended. */
public sealed interface Outcome {

    /** Answered with an HTTP status, {@code latencySeconds} after the request was due. */
    record Answered(int status, double latencySeconds) implements Outcome {}

    /** Not answered. */
    record Failed(Failure failure) implements Outcome {}

    /** Why a request was not answered; the CSV's status column holds the name in lower case. */
    enum Failure {
        /** No answer within the timeout, counted from when the request was due: a wait in the buffer counts. */
        TIMEOUT,
        /** The target refused the connection. */
        REFUSED,
        /** Any other transport failure: a reset or closed connection, a malformed answer. */
        ERROR,
        /** The buffer was full when the request was due; it was never sent. */
        OVERFLOW,
        /** Still waiting or in flight when the run was stopped. */
        UNANSWERED
    }

    /** Whether the request was answered with a 2xx: the only answers whose latency the percentiles count. */
    default boolean ok() {
        return this instanceof Answered a && a.status() >= 200 && a.status() < 300;
    }
}
