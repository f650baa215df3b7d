package io.dilu.autoscaler.activator;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.autoscaler.activator.ActivatorFrames.Accepted;
import io.dilu.autoscaler.scrape.proto.Stat;
import io.dilu.autoscaler.scrape.proto.WireStatMessage;
import io.dilu.autoscaler.scrape.proto.WireStatMessages;
import java.io.ByteArrayOutputStream;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Knative's field numbers, proven without the generated classes: a frame written out byte by byte as the protobuf
 * encoding specifies it (a tag is field number << 3 | wire type; strings and messages are wire type 2, a varint length
 * then the bytes; doubles wire type 1, eight bytes little-endian; int64 wire type 0, a varint), with Knative's numbers:
 * WireStatMessages.messages = 1; WireStatMessage.namespace = 1, name = 2, stat = 3; Stat.pod_name = 1,
 * average_concurrent_requests = 2, average_proxied_concurrent_requests = 3, request_count = 4,
 * proxied_request_count = 5, process_uptime = 6, timestamp = 7.
 */
class ActivatorWireFormatTest {

    /** Every length here is below 128, so each varint length is one byte. */
    static final byte[] STAT = bytes(
            0x0a, 0x05, 'a', 'c', 't', '-', '1', //                     1 pod_name, length 5: "act-1"
            0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f, //  2 average_concurrent_requests: 1.5 (0x3FF8000000000000)
            0x19, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xd0, 0x3f, //  3 average_proxied_concurrent_requests: 0.25
            0x21, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x40, //  4 request_count: 3.0 (0x4008000000000000)
            0x29, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, //  5 proxied_request_count: 2.0
            0x31, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x40, //  6 process_uptime: 8.0
            0x38, 0xac, 0x02); //                                        7 timestamp: 300 (varint 0b10_0101100)

    static final byte[] MESSAGE = concat(bytes(
            0x0a, 0x02, 'n', 's', //                  1 namespace, length 2: "ns"
            0x12, 0x05, 'r', 'e', 'v', '-', '1', //   2 name, length 5: "rev-1"
            0x1a, STAT.length), STAT); //             3 stat, length 55

    /** Two messages: the one above, and one with a namespace only (no stat: skipped). */
    static final byte[] FRAME = concat(bytes(0x0a, MESSAGE.length), MESSAGE, bytes(0x0a, 0x04, 0x0a, 0x02, 'n', 's'));

    @Test
    void theHandWrittenFrameIsTheOneExpected() {
        assertThat(STAT).hasSize(55);
        assertThat(MESSAGE).hasSize(68);
        assertThat(FRAME).hasSize(76);
    }

    @Test
    void decodesToTheActivatorsStat() {
        assertThat(ActivatorFrames.decode(FRAME, ActivatorFramesTest.BOUNDS)).isEqualTo(
                new Accepted(List.of(new ActivatorStat(new RevisionKey("ns", "rev-1"), "act-1", 1.5, 3.0))));
    }

    @Test
    void theGeneratedClassesUseTheSameNumbers() throws Exception {
        WireStatMessages parsed = WireStatMessages.parseFrom(FRAME);
        assertThat(parsed.getMessagesCount()).isEqualTo(2);
        WireStatMessage m = parsed.getMessages(0);
        assertThat(m.getNamespace()).isEqualTo("ns");
        assertThat(m.getName()).isEqualTo("rev-1");
        Stat s = m.getStat();
        assertThat(s.getPodName()).isEqualTo("act-1");
        assertThat(s.getAverageConcurrentRequests()).isEqualTo(1.5);
        assertThat(s.getAverageProxiedConcurrentRequests()).isEqualTo(0.25);
        assertThat(s.getRequestCount()).isEqualTo(3.0);
        assertThat(s.getProxiedRequestCount()).isEqualTo(2.0);
        assertThat(s.getProcessUptime()).isEqualTo(8.0);
        assertThat(s.getTimestamp()).isEqualTo(300);
        assertThat(parsed.getMessages(1).hasStat()).isFalse();
        // And they write what Knative's reads: fields in number order, as the hand-written frame has them.
        assertThat(parsed.toByteArray()).isEqualTo(FRAME);
    }

    static byte[] bytes(int... values) {
        byte[] b = new byte[values.length];
        for (int i = 0; i < values.length; i++) {
            b[i] = (byte) values[i];
        }
        return b;
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            out.writeBytes(p);
        }
        return out.toByteArray();
    }
}
