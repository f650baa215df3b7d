package io.dilu.deviceplugin.tokens;

import io.dilu.core.tokens.ControllerState;
import io.dilu.core.tokens.ControllerState;
import io.dilu.core.tokens.InstanceSample;
import io.dilu.core.tokens.TokenController;
import io.dilu.core.tokens.TokenGrant;
import io.dilu.core.tokens.TokenParameters;
import io.dilu.core.tokens.TokenPlan;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * One period of Algorithm 2 for one GPU, between the control blocks of its tenants and core's
 * {@link TokenController}: read what each hook reported, decide, write the grants.
 *
 * <p>Grants are cumulative. The new grant is {@code min(previous grant, launched so far) + tokens}: a
 * container that did not use its tokens cannot bank them beyond one period (an idle instance must not
 * come back with a burst), and one that is waiting for tokens has its backlog paid at the rate decided.
 * A best-effort container's tokens are released in {@code steps} equal parts over the period
 * ({@link #release}), so that its kernels are spread over the period rather than queued at its start, where
 * every one of them would hold up an SLO neighbour's next kernel (the emulated co-location benchmark: inference
 * p95 1.317 → 1.255 of Exclusive at the same training throughput). SLO containers get theirs at once, and
 * so does everyone on a GPU without an SLO container.
 * Tenants may be added and removed from other threads; {@link #tick} runs on the GPU's own thread.
 */
public final class GpuTokenLoop {

    private final TokenController controller;
    private final Map<String, Tracked> tenants = new ConcurrentHashMap<>();
    private volatile long blocksLaunched; // written by the GPU's own thread only

    private static final class Tracked {
        volatile Tenant tenant; // its quota may change; its control block never does
        long lastLaunched;
        long lastKlcCount;
        long pacedBase; // best-effort: this period's grant is pacedBase + a growing part of pacedTokens
        long pacedTokens;

        Tracked(Tenant tenant) {
            this.tenant = tenant;
            this.lastLaunched = tenant.block().blocksLaunched(tenant.device());
            this.lastKlcCount = tenant.block().klcCount(tenant.device());
        }
    }

    private final int steps;
    private volatile TokenPlan lastPlan;
    private final AtomicLongArray periodsByState = new AtomicLongArray(ControllerState.values().length);

    /** @param steps parts in which a best-effort container's tokens are released over a period (1: at once) */
    public GpuTokenLoop(TokenParameters params, int steps) {
        if (steps < 1 || steps > 100) {
            throw new IllegalArgumentException("refill steps must be in 1..100, got " + steps);
        }
        this.controller = new TokenController(params);
        this.steps = steps;
    }

    /** What this GPU's controller runs with. */
    public TokenParameters parameters() {
        return controller.parameters();
    }

    /** The latest period's decision, or null before the first. */
    public TokenPlan lastPlan() {
        return lastPlan;
    }

    /** Periods decided in {@code state} since the loop started. */
    public long periods(ControllerState state) {
        return periodsByState.get(state.ordinal());
    }

    public void add(Tenant tenant) {
        tenant.block().setThrottled(tenant.device(), true);
        tenants.put(tenant.id(), new Tracked(tenant));
    }

    /** Changes a tenant's quota or priority; what was counted of it so far stays. */
    public void update(Tenant tenant) {
        Tracked tracked = tenants.get(tenant.id());
        if (tracked != null && tracked.tenant.block() == tenant.block()) {
            tracked.tenant = tenant;
        } else {
            add(tenant);
        }
    }

    public void remove(String id) {
        tenants.remove(id);
    }

    /** Thread blocks launched by all tenants of the GPU since the loop started, as of the last period. */
    public long blocksLaunched() {
        return blocksLaunched;
    }

    public int size() {
        return tenants.size();
    }

    /**
     * @param now the period's time for the decision
     * @param monotonicNanos the same moment on CLOCK_MONOTONIC, the hook's clock, for the heartbeat
     */
    public TokenPlan tick(Instant now, long monotonicNanos) {
        List<Tracked> order = new ArrayList<>(tenants.values());
        List<InstanceSample> samples = new ArrayList<>(order.size());
        long[] launched = new long[order.size()];
        Tenant[] tenantsOfTick = new Tenant[order.size()];
        long launchedThisPeriod = 0;
        for (int i = 0; i < order.size(); i++) {
            Tracked t = order.get(i);
            Tenant tenant = t.tenant;
            tenantsOfTick[i] = tenant;
            launched[i] = tenant.block().blocksLaunched(tenant.device());
            long cycles = tenant.block().klcCount(tenant.device());
            double klcMillis = cycles > t.lastKlcCount ? tenant.block().klcNanos(tenant.device(), cycles) / 1e6 : Double.NaN;
            long delta = Math.max(0, launched[i] - t.lastLaunched);
            launchedThisPeriod += delta;
            samples.add(new InstanceSample(tenant.id(), tenant.sloSensitive(), tenant.request(), tenant.limit(),
                    delta, klcMillis > 0 ? klcMillis : Double.NaN, tenant.klcThreshold()));
            t.lastLaunched = launched[i];
            t.lastKlcCount = cycles;
        }
        blocksLaunched += launchedThisPeriod;
        TokenPlan plan = controller.issue(now, samples);
        periodsByState.incrementAndGet(plan.state().ordinal());
        lastPlan = plan;
        List<TokenGrant> grants = plan.grants();
        for (int i = 0; i < order.size(); i++) {
            Tenant tenant = tenantsOfTick[i];
            Tracked t = order.get(i);
            long previous = tenant.block().tokensGranted(tenant.device());
            long base = Math.min(previous, launched[i]);
            long tokens = grants.get(i).tokens();
            // Pacing protects SLO neighbours; without one (NONE) there is nobody to protect.
            boolean paced = !tenant.sloSensitive() && plan.state() != ControllerState.NONE;
            t.pacedBase = base;
            t.pacedTokens = paced ? tokens : 0;
            tenant.block().grantTokens(tenant.device(), base + (paced ? tokens / steps : tokens));
            tenant.block().setState(tenant.device(), plan.state().ordinal());
            tenant.block().heartbeat(monotonicNanos);
        }
        return plan;
    }

    /** Releases the {@code step}-th part (1..steps−1) of this period's best-effort tokens; on the GPU's thread. */
    public void release(int step) {
        for (Tracked t : tenants.values()) {
            if (t.pacedTokens > 0) {
                t.tenant.block().grantTokens(t.tenant.device(), t.pacedBase + t.pacedTokens * (step + 1) / steps);
            }
        }
    }

    /** Parts in which best-effort tokens are released over a period. */
    public int steps() {
        return steps;
    }
}
