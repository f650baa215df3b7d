package io.dilu.trials;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.InvalidFormatException;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.dilu.kube.profile.GpuFunctionProfile;
import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * A GpuFunctionProfile as a file: what {@code ./dilu profile --local --out DIR} writes and {@code ./dilu simulate
 * coscaling --profile FILE} reads, in the shape {@code kubectl get gfp NAME -o yaml} (or {@code -o json}) prints,
 * so a profile from a cluster and one from the emulated GPU read alike. Read into kube-contract's typed {@link
 * GpuFunctionProfile}, the one reading of the resource the autoscaler and the webhook share; the line of every
 * field is kept, so an error names the field and its line.
 */
public final class ProfileFile {

    /** The longest file read: a profile with a few hundred trials is a few tens of KiB. */
    public static final int MAX_CHARS = 1 << 20;

    private static final ObjectMapper YAML = YAMLMapper.builder().disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER)
            .enable(YAMLGenerator.Feature.MINIMIZE_QUOTES).enable(YAMLGenerator.Feature.ALWAYS_QUOTE_NUMBERS_AS_STRINGS).build();
    private static final ObjectMapper JSON = new ObjectMapper();

    private ProfileFile() {}

    /** A malformed profile file, with the line at fault. */
    public static final class InvalidProfileException extends IOException {
        public InvalidProfileException(String source, int line, String message) {
            super(source + ":" + line + ": " + message);
        }
    }

    /**
     * A profile read from a file, and where each of its fields was.
     *
     * @param lines the line of each field, by its dotted path ({@code status.trials.2.latencyMillis})
     */
    public record Read(GpuFunctionProfile profile, String source, Map<String, Integer> lines) {

        /** The line of a field, or of the nearest enclosing one the file has; 1 when none. */
        public int line(String field) {
            for (String f = field; !f.isEmpty(); f = f.contains(".") ? f.substring(0, f.lastIndexOf('.')) : "") {
                Integer line = lines.get(f);
                if (line != null) {
                    return line;
                }
            }
            return 1;
        }

        /** An error about {@code field}: {@code SOURCE:LINE: field message}. */
        public InvalidProfileException error(String field, String message) {
            return new InvalidProfileException(source, line(field), field + " " + message);
        }
    }

    /** The profile as YAML, after {@code comment} (lines that each start with #). */
    public static String yaml(GpuFunctionProfile profile, String comment) {
        try {
            return comment + YAML.writeValueAsString(profile);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a GpuFunctionProfile always serializes", e);
        }
    }

    /**
     * Reads one GpuFunctionProfile from YAML or JSON (a {@code kind: List} of exactly one too, as {@code kubectl get
     * -o yaml} prints a selection).
     *
     * @throws InvalidProfileException naming the line and what is wrong: not YAML or JSON, not a GpuFunctionProfile,
     *     a field of the wrong type
     */
    public static Read read(String text, String source) throws InvalidProfileException {
        if (text.length() > MAX_CHARS) {
            throw new InvalidProfileException(source, 1, "a profile must be at most " + MAX_CHARS + " characters, got " + text.length());
        }
        if (text.lines().map(String::strip).allMatch(l -> l.isEmpty() || l.startsWith("#") || l.equals("---"))) {
            throw new InvalidProfileException(source, 1, "the file is empty: it must hold a GpuFunctionProfile");
        }
        boolean json = text.stripLeading().startsWith("{");
        ObjectMapper mapper = json ? JSON : YAML;
        Map<String, Integer> lines = lines(json ? JSON.getFactory() : YAML.getFactory(), text, source);
        try {
            Map<?, ?> top = mapper.readValue(text, Map.class);
            if (top == null) {
                throw new InvalidProfileException(source, 1, "the file must hold a GpuFunctionProfile, not null");
            }
            if ("List".equals(top.get("kind"))) {
                List<?> items = top.get("items") instanceof List<?> l ? l : List.of();
                if (items.size() != 1) {
                    throw new InvalidProfileException(source, lines.getOrDefault("items", 1), "items must hold exactly one "
                            + "GpuFunctionProfile, got " + items.size() + " (kubectl get gfp NAME -o yaml prints one)");
                }
                Map<String, Integer> inner = lines.entrySet().stream().filter(e -> e.getKey().startsWith("items.0."))
                        .collect(Collectors.toMap(e -> e.getKey().substring("items.0.".length()), Map.Entry::getValue));
                Read one = new Read(mapper.convertValue(items.getFirst(), GpuFunctionProfile.class), source, inner);
                return checked(one, lines.getOrDefault("items", 1));
            }
            return checked(new Read(mapper.readValue(text, GpuFunctionProfile.class), source, lines), 1);
        } catch (InvalidProfileException e) {
            throw e;
        } catch (IllegalArgumentException e) {
            // convertValue wraps a mapping error of a List's item.
            throw e.getCause() instanceof JsonMappingException m ? mapping(m, source, lines, "items.0.")
                    : new InvalidProfileException(source, 1, e.getMessage());
        } catch (JsonMappingException e) {
            throw mapping(e, source, lines, "");
        } catch (JsonProcessingException e) {
            throw new InvalidProfileException(source, line(e.getLocation()), "not YAML or JSON: " + e.getOriginalMessage());
        }
    }

    private static Read checked(Read r, int topLine) throws InvalidProfileException {
        GpuFunctionProfile p = r.profile();
        if (!"GpuFunctionProfile".equals(p.getKind())) {
            throw new InvalidProfileException(r.source(), r.lines().getOrDefault("kind", topLine),
                    "kind must be GpuFunctionProfile, got " + p.getKind());
        }
        String version = GpuFunctionProfile.GROUP + "/" + GpuFunctionProfile.VERSION;
        if (!version.equals(p.getApiVersion())) {
            throw new InvalidProfileException(r.source(), r.lines().getOrDefault("apiVersion", topLine),
                    "apiVersion must be " + version + ", got " + p.getApiVersion());
        }
        return r;
    }

    /** A value of the wrong type: the field's path and line, what was there. */
    private static InvalidProfileException mapping(JsonMappingException e, String source, Map<String, Integer> lines, String prefix) {
        String field = e.getPath().stream().map(r -> r.getFieldName() != null ? r.getFieldName() : Integer.toString(r.getIndex()))
                .collect(Collectors.joining("."));
        if (field.isEmpty()) {
            return new InvalidProfileException(source, line(e.getLocation()), "the file must hold a GpuFunctionProfile: a "
                    + "mapping of apiVersion, kind, metadata, spec and status");
        }
        int line = lines.getOrDefault(prefix + field, line(e.getLocation()));
        String got = e instanceof InvalidFormatException f ? ", got '" + clip(String.valueOf(f.getValue())) + "'" : "";
        String type = e instanceof InvalidFormatException f ? " must be " + article(f.getTargetType()) + got
                : ": " + clip(e.getOriginalMessage());
        return new InvalidProfileException(source, line, field + type);
    }

    private static String article(Class<?> type) {
        return switch (type.getSimpleName()) {
            case "Integer", "int", "Long", "long" -> "an integer";
            case "Double", "double" -> "a number";
            case "Boolean", "boolean" -> "true or false";
            default -> "a " + type.getSimpleName();
        };
    }

    /** The line of every field, by dotted path, from the tokens: Jackson's trees do not keep where they were read. */
    private static Map<String, Integer> lines(JsonFactory factory, String text, String source) throws InvalidProfileException {
        Map<String, Integer> lines = new HashMap<>();
        try (JsonParser p = factory.createParser(text)) {
            for (JsonToken t = p.nextToken(); t != null; t = p.nextToken()) {
                if (t == JsonToken.FIELD_NAME || p.getParsingContext().inArray()) {
                    String path = p.getParsingContext().pathAsPointer().toString().substring(1).replace('/', '.');
                    lines.putIfAbsent(path, p.currentTokenLocation().getLineNr());
                }
            }
        } catch (JsonProcessingException e) {
            throw new InvalidProfileException(source, line(e.getLocation()), "not YAML or JSON: " + clip(e.getOriginalMessage()));
        } catch (IOException e) {
            throw new IllegalStateException("reading a string", e);
        }
        return lines;
    }

    private static int line(JsonLocation at) {
        return at == null || at.getLineNr() < 1 ? 1 : at.getLineNr();
    }

    private static String clip(String s) {
        String one = s == null ? "" : s.lines().findFirst().orElse("");
        return one.length() > 120 ? one.substring(0, 120) + "…" : one;
    }
}
