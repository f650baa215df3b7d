package io.dilu.kube;

import io.fabric8.kubernetes.api.model.NodeSelectorRequirement;
import io.fabric8.kubernetes.api.model.NodeSelectorTerm;
import io.fabric8.kubernetes.api.model.Pod;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The GPU products a pod selects through the {@value GpuProductLabel#KEY} node label: its {@code nodeSelector}
 * and its required node affinity ({@code requiredDuringSchedulingIgnoredDuringExecution}), read as kube-scheduler
 * reads them — the affinity's terms are alternatives, a term's expressions all hold, the nodeSelector holds as
 * well. Only {@code In} and {@code NotIn} on the label name products; a term that does not name any (another key
 * only, {@code Exists}, {@code DoesNotExist}) lets its nodes' GPUs be of any product, so then the pod selects no
 * product at all.
 *
 * <p>What it does not say is which node: kube-scheduler has matched every node's label (and everything else)
 * before an extender hears of the pod. This is what the label says about the GPUs, for a node whose GPUs are of
 * several models.
 */
public final class GpuProductSelection {

    /** Selects no product: every GPU will do. */
    public static final GpuProductSelection ANY = new GpuProductSelection(List.of());

    /** One expression on the label: its value is ({@code in}) or is not one of {@code values}. */
    private record Requirement(boolean in, Set<String> values) {

        boolean accepts(String value) {
            return values.contains(value) == in;
        }

        @Override
        public String toString() {
            return GpuProductLabel.KEY + (in ? " In " : " NotIn ") + values;
        }
    }

    /** Any of these alternatives, each a conjunction; none: any product. */
    private final List<List<Requirement>> alternatives;

    private GpuProductSelection(List<List<Requirement>> alternatives) {
        this.alternatives = alternatives;
    }

    /** What {@code pod} selects; {@link #ANY} when it does not select on the label. */
    public static GpuProductSelection of(Pod pod) {
        if (pod.getSpec() == null) {
            return ANY;
        }
        List<List<Requirement>> alternatives = new ArrayList<>();
        var affinity = pod.getSpec().getAffinity();
        var required = affinity == null || affinity.getNodeAffinity() == null ? null
                : affinity.getNodeAffinity().getRequiredDuringSchedulingIgnoredDuringExecution();
        if (required != null && required.getNodeSelectorTerms() != null) {
            for (NodeSelectorTerm term : required.getNodeSelectorTerms()) {
                if (term == null || (empty(term.getMatchExpressions()) && empty(term.getMatchFields()))) {
                    continue; // an empty term matches no node: it brings no GPU
                }
                alternatives.add(requirements(term.getMatchExpressions()));
            }
        }
        if (alternatives.isEmpty()) {
            alternatives.add(new ArrayList<>());
        }
        Map<String, String> nodeSelector = pod.getSpec().getNodeSelector();
        String selected = nodeSelector == null ? null : nodeSelector.get(GpuProductLabel.KEY);
        if (selected != null) {
            alternatives.forEach(a -> a.add(new Requirement(true, Set.of(GpuProductLabel.unshared(selected)))));
        }
        if (alternatives.stream().anyMatch(List::isEmpty)) {
            return ANY;
        }
        return new GpuProductSelection(alternatives.stream().map(List::copyOf).toList());
    }

    private static List<Requirement> requirements(List<NodeSelectorRequirement> expressions) {
        List<Requirement> out = new ArrayList<>();
        if (expressions == null) {
            return out;
        }
        for (NodeSelectorRequirement e : expressions) {
            if (e == null || !GpuProductLabel.KEY.equals(e.getKey())) {
                continue;
            }
            // A time-sliced GPU is still of its model: X-SHARED selects (or excludes) X's GPUs.
            Set<String> values = new TreeSet<>();
            if (e.getValues() != null) {
                e.getValues().stream().filter(java.util.Objects::nonNull).map(GpuProductLabel::unshared).forEach(values::add);
            }
            if ("In".equals(e.getOperator())) {
                out.add(new Requirement(true, values));
            } else if ("NotIn".equals(e.getOperator())) {
                out.add(new Requirement(false, values));
            }
        }
        return out;
    }

    private static boolean empty(List<?> list) {
        return list == null || list.isEmpty();
    }

    /** Whether the pod names GPU products at all. */
    public boolean constrains() {
        return !alternatives.isEmpty();
    }

    /** Whether GPUs GFD labels {@code value} (time-sliced or not) are of a product the pod selects. */
    public boolean accepts(String value) {
        String product = GpuProductLabel.unshared(value);
        return alternatives.isEmpty() || alternatives.stream().anyMatch(a -> a.stream().allMatch(r -> r.accepts(product)));
    }

    /** Whether a GPU the node agent reports as {@code model} (NVML's name) is of a product the pod selects. */
    public boolean acceptsModel(String model) {
        return accepts(GpuProductLabel.of(model));
    }

    /** As a user wrote it, e.g. {@code nvidia.com/gpu.product In [Tesla-V100-SXM2-16GB]}. */
    @Override
    public String toString() {
        if (alternatives.isEmpty()) {
            return "any " + GpuProductLabel.KEY;
        }
        return alternatives.stream().map(a -> a.stream().map(Requirement::toString).collect(Collectors.joining(" and ")))
                .collect(Collectors.joining(" or "));
    }
}
