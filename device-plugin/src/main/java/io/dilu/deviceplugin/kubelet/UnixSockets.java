package io.dilu.deviceplugin.kubelet;

import io.grpc.BindableService;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** gRPC over Unix-domain sockets, as the kubelet speaks it: servers and channels on socket files. */
public final class UnixSockets {

    private UnixSockets() {}

    /** One event loop for every client channel: channels come and go, their threads should not. */
    private static final class ClientLoop {
        @SuppressWarnings("deprecation")
        static final EventLoopGroup GROUP = new EpollEventLoopGroup(1,
                (java.util.concurrent.ThreadFactory) r -> Thread.ofPlatform().daemon().name("dilu-uds-client").unstarted(r));
    }

    /**
     * A server on a socket file, with its own event loop. Closing it waits until the listening socket is closed:
     * Netty deletes the socket file by its path when it closes, so a server serving the same path again must not
     * bind before that.
     */
    public record Served(Server server, EventLoopGroup group) implements AutoCloseable {
        @Override
        public void close() {
            server.shutdownNow();
            try {
                if (!server.awaitTermination(10, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the gRPC server did not stop in 10 s");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            }
        }
    }

    /** Serves {@code services} on {@code socket}, replacing a stale socket file left by a previous run. */
    @SuppressWarnings("deprecation") // the shaded Netty's epoll group is what grpc-netty-shaded accepts
    public static Served serve(Path socket, BindableService... services) throws IOException {
        Files.deleteIfExists(socket);
        EventLoopGroup group = new EpollEventLoopGroup(1,
                (java.util.concurrent.ThreadFactory) r -> Thread.ofPlatform().daemon().name("dilu-uds-server").unstarted(r));
        NettyServerBuilder builder = NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                .channelType(EpollServerDomainSocketChannel.class)
                .bossEventLoopGroup(group)
                .workerEventLoopGroup(group);
        for (BindableService s : services) {
            builder.addService(s);
        }
        try {
            return new Served(builder.build().start(), group);
        } catch (IOException | RuntimeException e) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw e;
        }
    }

    /** A plaintext channel to the server listening on {@code socket}. */
    @SuppressWarnings("deprecation")
    public static ManagedChannel connect(Path socket) {
        return NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                .channelType(EpollDomainSocketChannel.class)
                .eventLoopGroup(ClientLoop.GROUP)
                .usePlaintext()
                .build();
    }
}
