package io.dilu.autoscaler.activator;

import static io.dilu.autoscaler.activator.TestingFrames.frame;
import static io.dilu.autoscaler.activator.TestingFrames.message;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.autoscaler.activator.ActivatorFrames.Accepted;
import io.dilu.autoscaler.activator.ActivatorFrames.Bounds;
import io.dilu.autoscaler.activator.ActivatorFrames.Decoded;
import io.dilu.autoscaler.activator.ActivatorFrames.Refused;
import io.dilu.autoscaler.scrape.proto.Stat;
import io.dilu.autoscaler.scrape.proto.WireStatMessage;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class ActivatorFramesTest {

    static final Bounds BOUNDS = new Bounds(1024 * 1024, 100, 1_000_000);
    static final RevisionKey REV = new RevisionKey("tenant-a", "hello-00001");

    static Refused refused(byte[] frame) {
        Decoded d = ActivatorFrames.decode(frame, BOUNDS);
        assertThat(d).isInstanceOf(Refused.class);
        return (Refused) d;
    }

    static List<ActivatorStat> accepted(byte[] frame) {
        Decoded d = ActivatorFrames.decode(frame, BOUNDS);
        assertThat(d).as("%s", d).isInstanceOf(Accepted.class);
        return ((Accepted) d).stats();
    }

    /** A frame of one message whose stat is a good one changed by {@code change}. */
    static byte[] withStat(UnaryOperator<Stat.Builder> change) {
        Stat.Builder good = Stat.newBuilder().setPodName("activator-7d9f-x2x4z").setAverageConcurrentRequests(2)
                .setRequestCount(5);
        return frame(TestingFrames.message("tenant-a", "hello-00001", change.apply(good).build()));
    }

    @Test
    void acceptsTheActivatorsStatsOfEveryRevision() {
        List<ActivatorStat> stats = accepted(frame(message("tenant-a", "hello-00001", "activator-1", 1.5, 3),
                message("tenant-b", "world-00002", "activator-1", 0, 0)));
        assertThat(stats).containsExactly(new ActivatorStat(REV, "activator-1", 1.5, 3),
                new ActivatorStat(new RevisionKey("tenant-b", "world-00002"), "activator-1", 0, 0));
    }

    @Test
    void aConnectionFromAnActivatorPodMayReportForThatPodOnly() {
        byte[] mine = frame(message("tenant-a", "hello-00001", "activator-1", 1, 1));
        assertThat(ActivatorFrames.decode(mine, BOUNDS, java.util.Optional.of("activator-1"))).isInstanceOf(Accepted.class);
        byte[] others = frame(message("tenant-a", "hello-00001", "activator-1", 1, 1),
                message("tenant-b", "world-00002", "activator-2", 500, 500));
        Decoded d = ActivatorFrames.decode(others, BOUNDS, java.util.Optional.of("activator-1"));
        assertThat(d).isEqualTo(new Refused(FrameRefusal.WRONG_POD,
                "messages[1].stat.pod_name must be the connection's activator pod 'activator-1', got 'activator-2'"));
        assertThat(ActivatorFrames.decode(others, BOUNDS)).as("a sender not checked names any pod").isInstanceOf(Accepted.class);
    }

    @Test
    void skipsAMessageWithoutAStatAsKnativeDoes() {
        byte[] f = frame(WireStatMessage.newBuilder().setNamespace("tenant-a").setName("no-stat").build(),
                message("tenant-a", "hello-00001", "activator-1", 1, 1));
        assertThat(accepted(f)).extracting(ActivatorStat::revision).containsExactly(REV);
        assertThat(accepted(new byte[0])).isEmpty();
    }

    @Test
    void refusesWhatIsNotAWireStatMessages() {
        byte[][] garbage = {
                "GET / HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII), // wire type 7 does not exist
                {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff,
                        (byte) 0xff, (byte) 0xff, (byte) 0xff}, // a tag whose varint never ends
                {0x0a, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x07}, // a message of 2 GiB announced
                {0x0c}, // an end-group tag with no group
                {0x0a, 0x03, 0x0a, 0x05, 'n'}, // a namespace longer than its message
                {0x0a, 0x04, 0x0a, 0x02, (byte) 0xc3, 0x28}, // a namespace that is not UTF-8
        };
        for (byte[] g : garbage) {
            Refused r = refused(g);
            assertThat(r.reason()).as(Arrays.toString(g)).isEqualTo(FrameRefusal.MALFORMED);
            assertThat(r.detail()).startsWith("not a WireStatMessages: ").doesNotContain("\n");
        }
    }

    @Test
    void refusesAFrameCutShort() {
        byte[] whole = frame(message("tenant-a", "hello-00001", "activator-1", 1, 1));
        for (int cut = 1; cut < whole.length; cut++) {
            assertThat(refused(Arrays.copyOf(whole, cut)).reason()).as("first %d bytes", cut).isEqualTo(FrameRefusal.MALFORMED);
        }
    }

    @Test
    void refusesCountsNoActivatorCanHaveNamingTheFieldAndRange() {
        record Case(String field, UnaryOperator<Stat.Builder> change) {}
        List<Case> cases = List.of(
                new Case("average_concurrent_requests", s -> s.setAverageConcurrentRequests(Double.NaN)),
                new Case("average_concurrent_requests", s -> s.setAverageConcurrentRequests(Double.POSITIVE_INFINITY)),
                new Case("average_concurrent_requests", s -> s.setAverageConcurrentRequests(-0.5)),
                new Case("average_concurrent_requests", s -> s.setAverageConcurrentRequests(1e308)),
                new Case("average_proxied_concurrent_requests", s -> s.setAverageProxiedConcurrentRequests(-1)),
                new Case("request_count", s -> s.setRequestCount(Double.NaN)),
                new Case("request_count", s -> s.setRequestCount(Double.NEGATIVE_INFINITY)),
                new Case("request_count", s -> s.setRequestCount(1_000_000.5)),
                new Case("proxied_request_count", s -> s.setProxiedRequestCount(2e6)));
        for (Case c : cases) {
            Refused r = refused(withStat(c.change()));
            assertThat(r.reason()).isEqualTo(FrameRefusal.IMPLAUSIBLE);
            assertThat(r.detail()).as(c.field())
                    .startsWith("messages[0].stat." + c.field() + " must be finite and in 0..1000000, got ");
        }
        assertThat(accepted(withStat(s -> s.setRequestCount(1_000_000).setAverageConcurrentRequests(1_000_000))))
                .hasSize(1);
    }

    @Test
    void processUptimeNeedsOnlyBeFiniteAndNotNegative() {
        assertThat(accepted(withStat(s -> s.setProcessUptime(1e9)))).hasSize(1); // 31 years
        Refused r = refused(withStat(s -> s.setProcessUptime(Double.NaN)));
        assertThat(r.reason()).isEqualTo(FrameRefusal.IMPLAUSIBLE);
        assertThat(r.detail()).isEqualTo("messages[0].stat.process_uptime must be finite and at least 0, got NaN");
        assertThat(refused(withStat(s -> s.setProcessUptime(-1))).reason()).isEqualTo(FrameRefusal.IMPLAUSIBLE);
    }

    @Test
    void theSendersTimestampIsNeitherCheckedNorUsed() {
        assertThat(accepted(withStat(s -> s.setTimestamp(Long.MIN_VALUE)))).hasSize(1);
    }

    @Test
    void refusesNamesKubernetesDoesNotAllowNamingTheFieldAndRange() {
        String label = "a DNS-1123 label (1..63 characters of a-z, 0-9, '-', alphanumeric at both ends)";
        String subdomain = "a DNS-1123 subdomain (1..253 characters of a-z, 0-9, '-', '.' between labels, "
                + "alphanumeric at both ends)";
        record Case(WireStatMessage message, String field, String range, String got) {}
        List<Case> cases = List.of(
                new Case(message("Tenant", "hello-00001", "a", 1, 1), "namespace", label, "'Tenant' (6 characters)"),
                new Case(message("", "hello-00001", "a", 1, 1), "namespace", label, "'' (0 characters)"),
                new Case(message("tenant-a", "x".repeat(64), "a", 1, 1), "name", label,
                        "'" + "x".repeat(64) + "' (64 characters)"),
                new Case(message("tenant-a", "hello.v1", "a", 1, 1), "name", label, "'hello.v1' (8 characters)"),
                new Case(message("tenant-a", "-hello", "a", 1, 1), "name", label, "'-hello' (6 characters)"),
                // What a log shows of a sender's text is one line of printable characters.
                new Case(message("tenant-a", "hello\nWARN forged", "a", 1, 1), "name", label,
                        "'hello WARN forged' (17 characters)"),
                new Case(message("tenant-a", "hello-00001", "activator_1", 1, 1), "stat.pod_name", subdomain,
                        "'activator_1' (11 characters)"),
                new Case(message("tenant-a", "hello-00001", "", 1, 1), "stat.pod_name", subdomain, "'' (0 characters)"));
        for (Case c : cases) {
            Refused r = refused(frame(c.message()));
            assertThat(r.reason()).isEqualTo(FrameRefusal.BAD_NAME);
            assertThat(r.detail()).isEqualTo("messages[0]." + c.field() + " must be " + c.range() + ", got " + c.got());
        }
        String longPod = String.join(".", Collections.nCopies(4, "a".repeat(62))) + ".bb"; // 254 characters
        Refused r = refused(frame(message("tenant-a", "hello-00001", longPod, 1, 1)));
        assertThat(r.detail()).startsWith("messages[0].stat.pod_name must be " + subdomain + ", got '")
                .endsWith("…' (254 characters)");
        assertThat(accepted(frame(message("n".repeat(63), "r".repeat(63), longPod.substring(1), 1, 1)))).hasSize(1);
    }

    @Test
    void oneBadMessageRefusesTheWholeFrameAndSaysWhichOne() {
        Refused r = refused(frame(message("tenant-a", "hello-00001", "a", 1, 1), message("tenant-a", "hello-00002", "a", -1, 1)));
        assertThat(r.detail()).startsWith("messages[1].stat.average_concurrent_requests must be");
    }

    @Test
    void refusesMoreMessagesThanTheBoundBeforeBuildingThem() {
        List<WireStatMessage> many = Collections.nCopies(101, message("tenant-a", "hello-00001", "a", 1, 1));
        Refused r = refused(frame(many));
        assertThat(r.reason()).isEqualTo(FrameRefusal.TOO_MANY);
        assertThat(r.detail()).isEqualTo("messages must be at most 100 in one frame, got 101");
        assertThat(accepted(frame(many.subList(0, 100)))).hasSize(100);
    }

    @Test
    void refusesAFrameOverTheSizeBound() {
        Bounds small = new Bounds(1024, 100, 1e6);
        byte[] big = frame(Collections.nCopies(20, message("tenant-a", "hello-00001", "activator-" + "a".repeat(40), 1, 1)));
        assertThat(big.length).isGreaterThan(1024);
        Decoded d = ActivatorFrames.decode(big, small);
        assertThat(d).isEqualTo(new Refused(FrameRefusal.TOO_LARGE, "a frame must be at most 1024 bytes, got " + big.length));
    }

    @Test
    void boundsNameTheSettingAndItsRange() {
        assertThatThrownBy(() -> new Bounds(1023, 1, 1)).hasMessage(
                "dilu.autoscaler.activator.max-frame-bytes must be in 1024..16777216, got 1023");
        assertThatThrownBy(() -> new Bounds(1024, 0, 1)).hasMessage(
                "dilu.autoscaler.activator.max-messages-per-frame must be at least 1, got 0");
        assertThatThrownBy(() -> new Bounds(1024, 1, Double.NaN)).hasMessage(
                "dilu.autoscaler.activator.max-value must be finite and above 0, got NaN");
    }
}
