package io.dilu.testing;

/** Breaks JSON documents on purpose, for tests of code that must survive malformed input. */
public final class JsonSurgery {

    private JsonSurgery() {}

    /**
     * The document with the value after the first {@code key} (written with its quotes and colon, e.g.
     * {@code "\"spec\":"}) — an object, an array or a scalar — replaced by {@code value}, which may be any text.
     */
    public static String replaceValueAfter(String json, String key, String value) {
        int at = json.indexOf(key);
        if (at < 0) {
            return json;
        }
        int start = at + key.length();
        int end = start;
        int depth = 0;
        boolean inString = false;
        for (; end < json.length(); end++) {
            char ch = json.charAt(end);
            if (ch == '"' && json.charAt(end - 1) != '\\') {
                inString = !inString;
            } else if (!inString && (ch == '{' || ch == '[')) {
                depth++;
            } else if (!inString && (ch == '}' || ch == ']')) {
                if (depth == 0) {
                    break;
                }
                if (--depth == 0) {
                    end++;
                    break;
                }
            } else if (!inString && depth == 0 && ch == ',') {
                break;
            }
        }
        return json.substring(0, start) + value + json.substring(end);
    }
}
