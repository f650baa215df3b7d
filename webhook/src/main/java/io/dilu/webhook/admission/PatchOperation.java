package io.dilu.webhook.admission;

/**
 * One operation of a JSON Patch (RFC 6902). The webhook only adds and replaces, so the patch is exactly what
 * the mutator changed, built as it changes it: no difference of two documents is ever computed.
 *
 * @param op {@code add} or {@code replace}
 * @param path a JSON Pointer (RFC 6901), built with {@link #pointer}
 * @param value serialized as the pod's own fields are
 */
public record PatchOperation(String op, String path, Object value) {

    static PatchOperation add(String path, Object value) {
        return new PatchOperation("add", path, value);
    }

    static PatchOperation replace(String path, Object value) {
        return new PatchOperation("replace", path, value);
    }

    /** A JSON Pointer to {@code tokens}, each escaped ({@code ~} as {@code ~0}, {@code /} as {@code ~1}). */
    static String pointer(Object... tokens) {
        StringBuilder p = new StringBuilder();
        for (Object t : tokens) {
            p.append('/').append(t.toString().replace("~", "~0").replace("/", "~1"));
        }
        return p.toString();
    }
}
