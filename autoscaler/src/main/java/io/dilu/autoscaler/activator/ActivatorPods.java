package io.dilu.autoscaler.activator;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodIP;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Knative's activator pods as the API server knows them: which source address belongs to which running activator
 * pod. Knative's activator sends no credential with its websocket (see docs/autoscaler.md), so its pod's address,
 * which the API server assigned and a tenant cannot choose, is what it is known by.
 *
 * <p>A pod counts when it is in the Knative namespace, carries the activator's label, is Running, is not being
 * deleted, and is not on the host's network (a host-network pod's address is its node's, shared by every process
 * there). An address that two such pods claim (a stale status) belongs to neither.
 */
public final class ActivatorPods implements AutoCloseable {

    /**
     * An IPv4 literal in four decimal parts, or an IPv6 one (it has a colon, which the JDK never resolves as a name):
     * anything else is not looked up, so no name is ever resolved.
     */
    private static final Pattern IP_LITERAL = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}|[0-9a-fA-F.]*:[0-9a-fA-F:.]{1,44}");

    private final SharedIndexInformer<Pod> pods;

    /**
     * @param namespace Knative's namespace ({@code dilu.autoscaler.knative-namespace})
     * @param label the activator's label, {@code key=value} ({@code dilu.autoscaler.activator.pod-label})
     */
    public ActivatorPods(KubernetesClient client, String namespace, String label) {
        String[] kv = label(label);
        this.pods = client.pods().inNamespace(namespace).withLabel(kv[0], kv[1]).runnableInformer(0);
        pods.exceptionHandler((started, t) -> true);
    }

    /** The label's key and value; refused naming the setting when it is not {@code key=value}. */
    static String[] label(String label) {
        int eq = label == null ? -1 : label.indexOf('=');
        if (eq < 1 || eq == label.length() - 1) {
            throw new IllegalArgumentException("dilu.autoscaler.activator.pod-label must be key=value (e.g. app=activator), got '"
                    + label + "'");
        }
        return new String[] {label.substring(0, eq).strip(), label.substring(eq + 1).strip()};
    }

    public void start() {
        pods.start();
    }

    /** The sender at {@code address}: the running activator pod that has it, if any. */
    public Optional<ActivatorSender> at(String address) {
        return canonical(address).map(index(pods.getStore().list())::get).map(ActivatorSender::pod);
    }

    @Override
    public void close() {
        pods.close();
    }

    /** The running activator pods by address, from the pods the watch holds (all of them the label's). */
    static Map<String, String> index(Collection<Pod> pods) {
        Map<String, String> byAddress = new HashMap<>();
        Set<String> claimedTwice = new HashSet<>();
        for (Pod p : pods) {
            if (!running(p)) {
                continue;
            }
            for (String address : addresses(p)) {
                String other = byAddress.putIfAbsent(address, p.getMetadata().getName());
                if (other != null && !other.equals(p.getMetadata().getName())) {
                    claimedTwice.add(address);
                }
            }
        }
        byAddress.keySet().removeAll(claimedTwice);
        return byAddress;
    }

    private static boolean running(Pod p) {
        return p.getMetadata() != null && p.getMetadata().getName() != null && p.getMetadata().getDeletionTimestamp() == null
                && p.getStatus() != null && "Running".equals(p.getStatus().getPhase())
                && !(p.getSpec() != null && Boolean.TRUE.equals(p.getSpec().getHostNetwork()));
    }

    private static Set<String> addresses(Pod p) {
        Set<String> all = new LinkedHashSet<>();
        canonical(p.getStatus().getPodIP()).ifPresent(all::add);
        if (p.getStatus().getPodIPs() != null) {
            for (PodIP ip : p.getStatus().getPodIPs()) {
                canonical(ip.getIp()).ifPresent(all::add);
            }
        }
        return all;
    }

    /**
     * One spelling per address (IPv6 written in full by the JDK, an IPv4-mapped IPv6 address as its IPv4 address), so
     * that a pod's status and a socket's peer compare equal. Empty for anything that is not an IP literal.
     */
    static Optional<String> canonical(String literal) {
        if (literal == null || !IP_LITERAL.matcher(literal).matches()) {
            return Optional.empty();
        }
        try {
            // A literal of these characters is parsed, never resolved.
            return Optional.of(InetAddress.getByName(literal).getHostAddress());
        } catch (UnknownHostException e) {
            return Optional.empty();
        }
    }
}
