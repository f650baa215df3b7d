package io.dilu.autoscaler.bench;

import com.sun.net.httpserver.HttpServer;
import io.dilu.core.scaling.Autoscale;
import io.dilu.core.scaling.ScaleBounds;
import io.dilu.autoscaler.scrape.StatScraper;
import io.dilu.autoscaler.scrape.proto.Stat;
import io.dilu.core.scaling.RateWindow;
import io.dilu.core.scaling.ScalingParameters;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * {@code ./dilu bench autoscaler}: (1) the decision tick for 10,000 functions — record each function's
 * per-second rate in its 40-sample window and decide its scale, as the reconciler does every second; (2) how
 * many queue-proxies the scraper reads per second over loopback HTTP with protobuf, from servers on 200
 * loopback addresses (one per pod, as pods have their own IPs).
 */
public final class AutoscalerBench {

    public static void main(String[] args) throws Exception {
        int functions = 10_000;
        int pods = args.length > 0 ? Integer.parseInt(args[0]) : 200;
        double decideMs = decide(functions);
        double podsPerSecond = scrape(pods, Duration.ofSeconds(10));
        System.out.printf("decisions: %d functions, 40-sample windows, %.3f ms per tick (median of 60 ticks after 40 warm-up ticks)%n",
                functions, decideMs);
        System.out.printf("scraping: %d queue-proxies on loopback, %.0f pods read per second%n", pods, podsPerSecond);
        System.out.printf("BENCH autoscaler functions=%d decide_ms_per_tick=%.3f scrape_pods_per_second=%.0f%n",
                functions, decideMs, podsPerSecond);
    }

    static double decide(int functions) {
        ScalingParameters params = ScalingParameters.DEFAULTS;
        Random rnd = new Random(42);
        RateWindow[] windows = new RateWindow[functions];
        int[] current = new int[functions];
        double[] base = new double[functions];
        for (int f = 0; f < functions; f++) {
            windows[f] = new RateWindow(40);
            current[f] = 1 + rnd.nextInt(8);
            base[f] = rnd.nextDouble() * 100;
        }
        ScaleBounds bounds = new ScaleBounds(0, 1000, 1);
        Instant t = Instant.parse("2026-11-22T10:00:00Z");
        double[] millis = new double[60];
        long sink = 0;
        for (int tick = 0; tick < 100; tick++) {
            long start = System.nanoTime();
            for (int f = 0; f < functions; f++) {
                windows[f].record(t, base[f] * (0.5 + rnd.nextDouble()));
                Autoscale.Output out = Autoscale.decide(params, new Autoscale.Input(windows[f].samples(t),
                        windows[f].recent(t, params.burstWindowSeconds()), current[f], 10, 20, bounds, true,
                        Duration.ofSeconds(30), Optional.empty(), Optional.empty(), t));
                current[f] = Math.max(1, out.desired());
                sink += out.desired();
            }
            if (tick >= 40) {
                millis[tick - 40] = (System.nanoTime() - start) / 1e6;
            }
            t = t.plusSeconds(1);
        }
        if (sink < 0) {
            throw new AssertionError();
        }
        Arrays.sort(millis);
        return millis[millis.length / 2];
    }

    static double scrape(int pods, Duration duration) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        byte[] stat = Stat.newBuilder().setPodName("p").setRequestCount(12).setProxiedRequestCount(2).build().toByteArray();
        ExecutorService serverThreads = Executors.newFixedThreadPool(2);
        List<HttpServer> servers = new ArrayList<>();
        List<String> addresses = new ArrayList<>();
        for (int i = 0; i < pods; i++) {
            String ip = "127.0." + (1 + i / 250) + "." + (1 + i % 250);
            HttpServer server = HttpServer.create(new InetSocketAddress(ip, port), 64);
            server.createContext("/metrics", exchange -> {
                exchange.sendResponseHeaders(200, stat.length);
                exchange.getResponseBody().write(stat);
                exchange.close();
            });
            server.setExecutor(serverThreads);
            server.start();
            servers.add(server);
            addresses.add(ip);
        }
        ExecutorService io = Executors.newFixedThreadPool(4);
        StatScraper scraper = new StatScraper(new StatScraper.Limits(port, Duration.ofMillis(800), 65536, 100_000), io,
                new SimpleMeterRegistry());
        try {
            for (int warm = 0; warm < 10; warm++) {
                try (StatScraper.Round round = scraper.round()) {
                    CompletableFuture.allOf(round.scrape(addresses).toArray(CompletableFuture[]::new)).join();
                }
            }
            long read = 0;
            long failed = 0;
            long start = System.nanoTime();
            long end = start + duration.toNanos();
            while (System.nanoTime() < end) {
                // One round per tick, as the reconciler scrapes.
                try (StatScraper.Round round = scraper.round()) {
                    for (var f : round.scrape(addresses)) {
                        if (f.join().rps().isPresent()) {
                            read++;
                        } else {
                            failed++;
                        }
                    }
                }
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            if (failed > 0) {
                System.out.printf("(%d scrapes failed)%n", failed);
            }
            return read / seconds;
        } finally {
            servers.forEach(s -> s.stop(0));
            serverThreads.shutdownNow();
            io.shutdownNow();
        }
    }
}
