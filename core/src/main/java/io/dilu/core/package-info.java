/**
 * The decisions of Dilu for Knative, as pure functions of their inputs and of the time passed in.
 *
 * <p>Nothing here talks to Kubernetes, gRPC or a GPU: the Quarkus applications translate events into
 * calls of this package and its answers into API writes, and the simulator runs the very same code.
 */
package io.dilu.core;
