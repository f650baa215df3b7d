package io.dilu.extender.api;

/** The pod a request is about, as the request names it. */
public record PodRef(String namespace, String name, String uid) {

    @Override
    public String toString() {
        return namespace + "/" + name + " (UID " + uid + ")";
    }
}
