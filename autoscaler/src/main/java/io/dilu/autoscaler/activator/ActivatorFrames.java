package io.dilu.autoscaler.activator;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.WireFormat;
import io.dilu.autoscaler.scrape.proto.Stat;
import io.dilu.autoscaler.scrape.proto.WireStatMessage;
import io.dilu.autoscaler.scrape.proto.WireStatMessages;
import io.dilu.core.profiling.TrialReport;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Decodes and checks one frame of Knative's activator: one binary websocket message (put together from its
 * websocket frames), a protobuf {@code WireStatMessages} with a {@code Stat} per revision the activator proxied for.
 * Anything in the cluster can reach the autoscaler's port, so a frame is hostile input: it is accepted whole or
 * refused whole, and a refusal names the field and the range it had to be in. The sender's {@code timestamp} is not
 * read: a stat counts from when it arrived.
 */
final class ActivatorFrames {

    private static final String ONE_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
    /** How much of a sender's text a refusal quotes. */
    private static final int QUOTED_CHARS = 64;

    private ActivatorFrames() {
    }

    /** The two shapes of Kubernetes name a frame carries, as Kubernetes validates them. */
    enum Dns1123 {
        /** A namespace, and a revision name (Knative requires a DNS-1035 label, which is also a DNS-1123 one). */
        LABEL(63, "a-z, 0-9, '-'", ONE_LABEL),
        /** A pod name. */
        SUBDOMAIN(253, "a-z, 0-9, '-', '.' between labels", ONE_LABEL + "(\\." + ONE_LABEL + ")*");

        private final int maxChars;
        private final String chars;
        private final Pattern pattern;

        Dns1123(int maxChars, String chars, String regex) {
            this.maxChars = maxChars;
            this.chars = chars;
            this.pattern = Pattern.compile(regex);
        }

        boolean allows(String name) {
            // The length first: the pattern then runs over at most maxChars characters.
            return name.length() <= maxChars && pattern.matcher(name).matches();
        }

        @Override
        public String toString() {
            return "DNS-1123 " + name().toLowerCase(Locale.ROOT) + " (1.." + maxChars + " characters of " + chars
                    + ", alphanumeric at both ends)";
        }
    }

    /**
     * How much of a frame is believed.
     *
     * @param maxBytes the largest frame
     * @param maxMessages the most {@code WireStatMessage}s in one frame
     * @param maxValue the highest concurrency or request count one activator pod may report for one revision
     */
    record Bounds(int maxBytes, int maxMessages, double maxValue) {
        /**
         * Room for two revisions' stats at their longest (63-character namespace and name, 253-character pod name:
         * about 450 bytes each).
         */
        static final int MIN_BYTES = 1024;
        /** Each open connection may hold one frame this large while it arrives. */
        static final int MAX_BYTES = 16 * 1024 * 1024;

        Bounds {
            if (maxBytes < MIN_BYTES || maxBytes > MAX_BYTES) {
                throw new IllegalArgumentException("dilu.autoscaler.activator.max-frame-bytes must be in " + MIN_BYTES + ".."
                        + MAX_BYTES + ", got " + maxBytes);
            }
            if (maxMessages < 1) {
                throw new IllegalArgumentException(
                        "dilu.autoscaler.activator.max-messages-per-frame must be at least 1, got " + maxMessages);
            }
            if (!(maxValue > 0) || Double.isInfinite(maxValue)) {
                throw new IllegalArgumentException(
                        "dilu.autoscaler.activator.max-value must be finite and above 0, got " + maxValue);
            }
        }
    }

    /** What became of a frame. */
    sealed interface Decoded permits Accepted, Refused {
    }

    /** A frame whose every stat passed; messages without a stat are left out, as Knative's server leaves them. */
    record Accepted(List<ActivatorStat> stats) implements Decoded {
        Accepted {
            stats = List.copyOf(stats);
        }
    }

    /** A frame dropped whole, why (the metric's tag) and what exactly (field, allowed range, what came). */
    record Refused(FrameRefusal reason, String detail) implements Decoded {
        Refused {
            Objects.requireNonNull(reason, "reason");
            Objects.requireNonNull(detail, "detail");
        }
    }

    /** Decodes and checks a frame from a sender whose pod is not known (authentication {@code none}). */
    static Decoded decode(byte[] frame, Bounds bounds) {
        return decode(frame, bounds, Optional.empty());
    }

    /**
     * Decodes and checks a frame. Never throws for what the frame holds.
     *
     * @param pod the activator pod the connection comes from, when known: every stat must name it, so that one
     *     activator speaks for itself only (Knative's activator fills {@code pod_name} with its own pod's name)
     */
    static Decoded decode(byte[] frame, Bounds bounds, Optional<String> pod) {
        if (frame.length > bounds.maxBytes()) {
            return tooLarge(frame.length, bounds);
        }
        // Counted before parsing, so that a frame of many tiny messages is refused before they are built.
        int count;
        WireStatMessages wire;
        try {
            count = countMessages(frame);
            if (count > bounds.maxMessages()) {
                return new Refused(FrameRefusal.TOO_MANY,
                        "messages must be at most " + bounds.maxMessages() + " in one frame, got " + count);
            }
            wire = WireStatMessages.parseFrom(frame);
        } catch (IOException e) {
            return new Refused(FrameRefusal.MALFORMED,
                    "not a WireStatMessages: " + TrialReport.quoted(e.getMessage(), QUOTED_CHARS));
        }
        List<ActivatorStat> stats = new ArrayList<>(count);
        for (int i = 0; i < wire.getMessagesCount(); i++) {
            WireStatMessage m = wire.getMessages(i);
            if (!m.hasStat()) {
                continue; // Knative's server skips these too: room for a later message type
            }
            String at = "messages[" + i + "]";
            Optional<Refused> bad = firstBad(at, m, bounds.maxValue());
            if (bad.isPresent()) {
                return bad.get();
            }
            Stat s = m.getStat();
            if (pod.isPresent() && !pod.get().equals(s.getPodName())) {
                return new Refused(FrameRefusal.WRONG_POD, at + ".stat.pod_name must be the connection's activator pod '"
                        + pod.get() + "', got '" + TrialReport.quoted(s.getPodName(), QUOTED_CHARS) + "'");
            }
            stats.add(new ActivatorStat(new RevisionKey(m.getNamespace(), m.getName()), s.getPodName(),
                    s.getAverageConcurrentRequests(), s.getRequestCount()));
        }
        return new Accepted(stats);
    }

    /** The refusal of a frame of {@code bytes} (or at least that many), over {@code bounds.maxBytes}. */
    static Refused tooLarge(long bytes, Bounds bounds) {
        return new Refused(FrameRefusal.TOO_LARGE,
                "a frame must be at most " + bounds.maxBytes() + " bytes, got " + bytes);
    }

    /** The number of top-level {@code messages} fields, read without building them. */
    private static int countMessages(byte[] frame) throws IOException {
        CodedInputStream in = CodedInputStream.newInstance(frame);
        int count = 0;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            if (WireFormat.getTagFieldNumber(tag) == WireStatMessages.MESSAGES_FIELD_NUMBER) {
                count++;
            }
            if (!in.skipField(tag)) {
                throw new InvalidProtocolBufferException("an end-group tag outside a group");
            }
        }
        return count;
    }

    /** The first field of the message outside its range, if any. */
    private static Optional<Refused> firstBad(String at, WireStatMessage m, double maxValue) {
        Stat s = m.getStat();
        return name(at + ".namespace", m.getNamespace(), Dns1123.LABEL)
                .or(() -> name(at + ".name", m.getName(), Dns1123.LABEL))
                .or(() -> name(at + ".stat.pod_name", s.getPodName(), Dns1123.SUBDOMAIN))
                .or(() -> count(at + ".stat.average_concurrent_requests", s.getAverageConcurrentRequests(), maxValue))
                .or(() -> count(at + ".stat.average_proxied_concurrent_requests",
                        s.getAverageProxiedConcurrentRequests(), maxValue))
                .or(() -> count(at + ".stat.request_count", s.getRequestCount(), maxValue))
                .or(() -> count(at + ".stat.proxied_request_count", s.getProxiedRequestCount(), maxValue))
                // Seconds a process has run: a long-lived one passes any count's bound, so only sign and finiteness.
                .or(() -> count(at + ".stat.process_uptime", s.getProcessUptime(), Double.MAX_VALUE));
    }

    private static Optional<Refused> name(String field, String value, Dns1123 shape) {
        if (shape.allows(value)) {
            return Optional.empty();
        }
        return Optional.of(new Refused(FrameRefusal.BAD_NAME, field + " must be a " + shape + ", got '"
                + TrialReport.quoted(value, QUOTED_CHARS) + "' (" + value.length() + " characters)"));
    }

    private static Optional<Refused> count(String field, double value, double max) {
        // NaN fails both comparisons, and so is refused with the infinities.
        if (value >= 0 && value <= max) {
            return Optional.empty();
        }
        String range = max == Double.MAX_VALUE ? "finite and at least 0" : "finite and in 0.." + plain(max);
        return Optional.of(new Refused(FrameRefusal.IMPLAUSIBLE, field + " must be " + range + ", got " + value));
    }

    private static String plain(double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
    }
}
