package io.dilu.core.quota;

import java.util.List;
import java.util.stream.Collectors;

/** Thrown by {@link Quota#of} when one or more fields are out of range; lists every offending field. */
public final class InvalidQuotaException extends IllegalArgumentException {

    private final List<FieldError> errors;

    public InvalidQuotaException(List<FieldError> errors) {
        super(errors.stream().map(FieldError::message).collect(Collectors.joining("; ")));
        this.errors = List.copyOf(errors);
    }

    public List<FieldError> errors() {
        return errors;
    }
}
