package io.dilu.autoscaler.activator;

import io.dilu.autoscaler.scrape.proto.Stat;
import io.dilu.autoscaler.scrape.proto.WireStatMessage;
import io.dilu.autoscaler.scrape.proto.WireStatMessages;
import java.util.List;

/** Frames as Knative's activator sends them, built with the generated classes. */
final class TestingFrames {

    private TestingFrames() {
    }

    /** One revision's stat from one activator pod, as the activator fills it (the proxied fields stay 0). */
    static WireStatMessage message(String namespace, String name, String pod, double concurrency, double requestCount) {
        return message(namespace, name, Stat.newBuilder().setPodName(pod).setAverageConcurrentRequests(concurrency)
                .setRequestCount(requestCount).setTimestamp(1_700_000_000L).build());
    }

    static WireStatMessage message(String namespace, String name, Stat stat) {
        return WireStatMessage.newBuilder().setNamespace(namespace).setName(name).setStat(stat).build();
    }

    static byte[] frame(WireStatMessage... messages) {
        return frame(List.of(messages));
    }

    static byte[] frame(List<WireStatMessage> messages) {
        return WireStatMessages.newBuilder().addAllMessages(messages).build().toByteArray();
    }
}
