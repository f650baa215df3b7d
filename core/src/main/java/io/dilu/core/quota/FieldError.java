package io.dilu.core.quota;

/**
 * One reason an input was refused: the field, the value given and what would have been accepted.
 *
 * @param field the field's name as the user wrote it, e.g. {@code dilu.io/sm-limit}
 * @param value the value given, as text
 * @param allowed the accepted values or range, e.g. {@code 1..100}
 */
public record FieldError(String field, String value, String allowed) {

    public String message() {
        return field + "=" + value + " is not allowed: must be " + allowed;
    }

    @Override
    public String toString() {
        return message();
    }
}
