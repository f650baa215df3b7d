package io.dilu.e2e;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodStatusBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.ByteArrayOutputStream;
import java.net.InetAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Knative's activator as a test plays it: a pod the API server knows (the test plays its kubelet: Running, with a pod
 * address), and a websocket to the autoscaler from that address, as the real activator's comes from its pod's. The
 * machine's loopback network is 127.0.0.0/8, so each played pod has an address of its own there. Like Knative's
 * activator, the websocket carries no credential. Frames are Knative's wire format ({@code WireStatMessages},
 * protobuf), encoded here by hand from Knative's field numbers.
 */
public final class PlayedActivator implements WebSocket.Listener, AutoCloseable {

    /** Knative's activator pods carry this label (Knative's config/core/deployments/activator.yaml). */
    public static final Map<String, String> LABELS = Map.of("app", "activator", "role", "activator");

    /** The close code the autoscaler sent, or -1 when the connection broke without one. */
    public final CompletableFuture<Integer> ended = new CompletableFuture<>();
    private final WebSocket ws;

    /** One client per source address; each websocket has its own TCP connection still. */
    private static final Map<String, HttpClient> CLIENTS = new ConcurrentHashMap<>();

    private PlayedActivator(int port, String from) throws Exception {
        HttpClient http = CLIENTS.computeIfAbsent(from, a -> {
            try {
                return HttpClient.newBuilder().localAddress(InetAddress.getByName(a)).build();
            } catch (java.net.UnknownHostException e) {
                throw new IllegalArgumentException(e);
            }
        });
        this.ws = http.newWebSocketBuilder().buildAsync(URI.create("ws://127.0.0.1:" + port + "/"), this).get(10, TimeUnit.SECONDS);
    }

    /** A websocket to the autoscaler's activator port from {@code from}; fails as the upgrade is refused. */
    public static PlayedActivator connect(int port, String from) throws Exception {
        return new PlayedActivator(port, from);
    }

    /** A pod with {@code labels} in {@code namespace}, which the test's kubelet says is Running at {@code address}. */
    public static Pod register(KubernetesClient client, String namespace, String name, String address, Map<String, String> labels) {
        Pod pod = client.pods().inNamespace(namespace).resource(new PodBuilder().withNewMetadata().withName(name)
                .withLabels(labels).endMetadata().withNewSpec().withAutomountServiceAccountToken(false).addNewContainer()
                .withName("activator").withImage("gcr.io/knative-releases/knative.dev/serving/cmd/activator").endContainer()
                .endSpec().build()).create();
        pod.setStatus(new PodStatusBuilder().withPhase("Running").withPodIP(address).addNewPodIP(address).build());
        return client.pods().inNamespace(namespace).resource(pod).updateStatus();
    }

    public void send(ByteBuffer frame) throws Exception {
        ws.sendBinary(frame, true).get(10, TimeUnit.SECONDS);
    }

    /** Sends without waiting for the send to complete (a flood). */
    public CompletableFuture<WebSocket> sendNow(ByteBuffer frame) {
        return ws.sendBinary(frame, true);
    }

    public void closeNormally() throws Exception {
        ws.sendClose(WebSocket.NORMAL_CLOSURE, "done").get(10, TimeUnit.SECONDS);
    }

    @Override
    public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
        ended.complete(statusCode);
        return null;
    }

    @Override
    public void onError(WebSocket webSocket, Throwable error) {
        ended.complete(-1);
    }

    @Override
    public void close() {
        ws.abort();
    }

    /** One WireStatMessage: namespace (1), name (2) and a Stat (3) of pod_name (1), concurrency (2), requests (4). */
    public static byte[] wireStat(String namespace, String revision, String activatorPod, double concurrency, double requests) {
        ByteArrayOutputStream stat = new ByteArrayOutputStream();
        field(stat, 1, activatorPod.getBytes(StandardCharsets.UTF_8));
        fixed64(stat, 2, concurrency);
        fixed64(stat, 4, requests);
        ByteArrayOutputStream message = new ByteArrayOutputStream();
        field(message, 1, namespace.getBytes(StandardCharsets.UTF_8));
        field(message, 2, revision.getBytes(StandardCharsets.UTF_8));
        field(message, 3, stat.toByteArray());
        return message.toByteArray();
    }

    /** WireStatMessages: the messages, each as field 1 (repeated). */
    public static ByteBuffer frame(byte[]... messages) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] m : messages) {
            field(out, 1, m);
        }
        return ByteBuffer.wrap(out.toByteArray());
    }

    private static void field(ByteArrayOutputStream out, int number, byte[] bytes) {
        varint(out, number << 3 | 2);
        varint(out, bytes.length);
        out.writeBytes(bytes);
    }

    private static void fixed64(ByteArrayOutputStream out, int number, double value) {
        varint(out, number << 3 | 1);
        out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putDouble(value).array());
    }

    private static void varint(ByteArrayOutputStream out, int value) {
        while ((value & ~0x7F) != 0) {
            out.write(value & 0x7F | 0x80);
            value >>>= 7;
        }
        out.write(value);
    }
}
