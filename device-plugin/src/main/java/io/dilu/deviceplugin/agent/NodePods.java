package io.dilu.deviceplugin.agent;

import java.util.Collection;

/**
 * The pods of this node, for guessing which container the kubelet is admitting. The watch's copy is
 * cheap but may lag the API server by seconds on a loaded node; {@link #read()} asks the API server, for
 * the rare admission the copy knows nothing about.
 */
@FunctionalInterface
public interface NodePods {

    /** The pods as the watch last saw them (empty when it has not started). */
    Collection<PodView> seen();

    /** The pods as the API server has them now, or {@link #seen()} when it does not answer. */
    default Collection<PodView> read() {
        return seen();
    }
}
