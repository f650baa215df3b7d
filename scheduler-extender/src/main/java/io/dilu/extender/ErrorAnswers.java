package io.dilu.extender;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import io.dilu.extender.api.ErrorAnswer;
import io.dilu.extender.api.InvalidRequest;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/**
 * Every failure becomes a short JSON answer, {@code {"Error": "..."}}, with no stack trace: 400 for a body that
 * is not a valid request (naming the field), the status of any other client error, 500 for the extender's own
 * faults (logged with their stack trace here, never sent).
 */
public class ErrorAnswers {

    private static final Logger LOG = Logger.getLogger(ErrorAnswers.class);

    /** Jackson's messages may quote the body; a caller gets this much of one at most. */
    private static final int MAX_DETAIL = 200;

    private final Refusals refusals;

    public ErrorAnswers(Refusals refusals) {
        this.refusals = refusals;
    }

    @ServerExceptionMapper
    public Response invalid(InvalidRequest e) {
        return badBody(e.getMessage());
    }

    // Named beside its superclass so that it wins over the built-in mapper of quarkus-rest-jackson.
    @ServerExceptionMapper({JsonProcessingException.class, MismatchedInputException.class})
    public Response malformed(JsonProcessingException e) {
        return badBody(describe(e));
    }

    @ServerExceptionMapper
    public Response http(WebApplicationException e) {
        if (e.getCause() instanceof JsonProcessingException json) {
            return malformed(json);
        }
        int status = e.getResponse().getStatus();
        if (status >= 500) {
            return internal(e);
        }
        refusals.count(Refusals.Reason.BAD_REQUEST);
        return answer(status, truncate(e.getMessage()));
    }

    @ServerExceptionMapper
    public Response internal(Exception e) {
        refusals.count(Refusals.Reason.INTERNAL);
        LOG.error("a request failed inside the extender", e);
        return answer(500, "internal error in the Dilu scheduler extender; its log has the details");
    }

    private Response badBody(String message) {
        refusals.count(Refusals.Reason.BAD_BODY);
        return answer(400, message);
    }

    /** Where in the body Jackson gave up ({@code Pod.spec.containers[0]}), and why, in short. */
    static String describe(JsonProcessingException e) {
        StringBuilder where = new StringBuilder();
        if (e instanceof JsonMappingException mapping) {
            for (JsonMappingException.Reference r : mapping.getPath()) {
                if (r.getFieldName() != null) {
                    where.append(where.isEmpty() ? "" : ".").append(r.getFieldName());
                } else if (r.getIndex() >= 0) {
                    where.append('[').append(r.getIndex()).append(']');
                }
            }
        }
        String at = where.isEmpty() ? "" : " at " + where;
        String line = e.getLocation() == null ? ""
                : " (line " + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr() + ")";
        return "the body is not valid JSON for this request" + at + line + ": " + truncate(e.getOriginalMessage());
    }

    private static String truncate(String s) {
        String one = String.valueOf(s).replaceAll("\\p{Cntrl}", " ");
        return one.length() <= MAX_DETAIL ? one : one.substring(0, MAX_DETAIL) + "…";
    }

    private static Response answer(int status, String message) {
        return Response.status(status).type(MediaType.APPLICATION_JSON_TYPE).entity(new ErrorAnswer(message)).build();
    }
}
