package io.dilu.deviceplugin.tokens;

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
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.jboss.logging.Logger;

/**
 * One period of Algorithm 2 for one GPU, between the control blocks of its tenants and core's
 * {@link TokenController}: read what each hook reported, decide, write the grants.
 *
 * <p>Grants are cumulative. The new grant is {@code min(previous grant, launched so far) + tokens}: a
 * container that did not use its tokens cannot bank them beyond one period (an idle instance must not
 * come back with a burst), and one that is waiting for tokens has its backlog paid at the rate decided.
 * A best-effort container's tokens are released in {@code steps} equal parts over the period
 * (the hook releases them itself, from the grant page's paced refill, so the agent wakes once a period), so that its kernels are spread over the period rather than queued at its start, where
 * every one of them would hold up an SLO neighbour's next kernel (the emulated co-location benchmark: inference
 * p95 1.317 → 1.255 of Exclusive at the same training throughput). SLO containers get theirs at once, and
 * so does everyone on a GPU without an SLO container.
 *
 * <p>Each report page is the tenant's to write: it is read through {@link ReportReading}, which believes only
 * what a hook could have written, and a tenant whose page cannot be read at all is skipped for the period
 * (its grant and heartbeat still written) — one tenant's garbage never costs its neighbours a period.
 * Tenants may be added and removed from other threads; {@link #tick} runs on the GPU's own thread.
 */
public final class GpuTokenLoop {

    private static final Logger LOG = Logger.getLogger(GpuTokenLoop.class);

    /** Most blocks one period may add to a report: beyond any grant, far from a long's overflow. */
    static final long MAX_BLOCKS_PER_PERIOD = 1L << 40;

    private final TokenController controller;
    private final int steps;
    private final int yieldMicros;
    private final Map<String, Tracked> tenants = new ConcurrentHashMap<>();
    private volatile long blocksLaunched; // written by the GPU's own thread only
    private volatile TokenPlan lastPlan;
    private final AtomicLongArray periodsByState = new AtomicLongArray(ControllerState.values().length);
    private final AtomicLongArray faults = new AtomicLongArray(ReportReading.Fault.values().length);
    private final AtomicLong lastTickNanos = new AtomicLong(System.nanoTime());
    private final AtomicLong emergencies = new AtomicLong();
    private ControllerState lastState = ControllerState.NONE; // the GPU's own thread only
    // The GPU's own thread only: a period's readings, kept for the next so that a period allocates less.
    private final List<Tracked> read = new ArrayList<>();
    private final List<InstanceSample> samples = new ArrayList<>();

    private static final class Tracked {
        volatile Tenant tenant; // its quota may change; its control block never does
        long lastLaunched;
        long lastKlcCount;

        Tracked(Tenant tenant) {
            this.tenant = tenant;
            this.lastLaunched = Math.max(0, tenant.block().blocksLaunched(tenant.device()));
            this.lastKlcCount = Math.max(0, tenant.block().klcCount(tenant.device()));
        }
    }

    /** @param steps parts in which a best-effort container's tokens are released over a period (1: at once) */
    public GpuTokenLoop(TokenParameters params, int steps) {
        if (steps < 1 || steps > 100) {
            throw new IllegalArgumentException("refill steps must be in 1..100, got " + steps);
        }
        this.controller = new TokenController(params);
        this.steps = steps;
        // A yielding launch waits at most one period: the grant it waits beside is renewed by then.
        this.yieldMicros = (int) Math.min(Integer.MAX_VALUE, params.period().toNanos() / 1000);
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

    /**
     * Times the GPU entered EMERGENCY since the loop started: a count, not the state, so that whoever reads it
     * once a second still sees an emergency that began and ended in between.
     */
    public long emergencies() {
        return emergencies.get();
    }

    /**
     * The launch cycle a tenant's latest one is judged against, in ms, or NaN (see
     * {@link TokenController#klcReferenceMillis}): read it after the loop stopped ({@link TokenManager#close}).
     */
    public double klcReferenceMillis(String tenantId) {
        return controller.klcReferenceMillis(tenantId);
    }

    /** Report-page faults of this GPU's tenants since the loop started. */
    public long faults(ReportReading.Fault fault) {
        return faults.get(fault.ordinal());
    }

    /** CLOCK_MONOTONIC of the latest completed period, for liveness. */
    public long lastTickNanos() {
        return lastTickNanos.get();
    }

    public void add(Tenant tenant) {
        tenant.block().setPeriodMicros((int) (parameters().period().toNanos() / 1000));
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
        read.clear();
        samples.clear();
        long launchedThisPeriod = 0;
        for (Tracked t : tenants.values()) {
            Tenant tenant = t.tenant;
            try {
                ReportReading r = ReportReading.of(t.lastLaunched, t.lastKlcCount,
                        tenant.block().blocksLaunched(tenant.device()), tenant.block().klcCount(tenant.device()),
                        n -> tenant.block().klcNanos(tenant.device(), n), MAX_BLOCKS_PER_PERIOD);
                for (ReportReading.Fault f : r.faults()) {
                    faults.incrementAndGet(f.ordinal());
                }
                samples.add(new InstanceSample(tenant.id(), tenant.sloSensitive(), tenant.request(), tenant.limit(),
                        r.launchedDelta(), r.klcMillis(), tenant.klcThreshold(), tenant.parked()));
                t.lastLaunched = r.launched();
                t.lastKlcCount = r.klcCount();
                read.add(t);
                launchedThisPeriod += r.launchedDelta();
            } catch (RuntimeException e) {
                faults.incrementAndGet(ReportReading.Fault.UNREADABLE.ordinal());
                LOG.debugf(e, "tenant %s: its report page could not be read this period", tenant.id());
                tenant.block().heartbeat(monotonicNanos); // the grant stays; the tenant is not left to go stale
            }
        }
        blocksLaunched += launchedThisPeriod;
        TokenPlan plan = controller.issue(now, samples);
        periodsByState.incrementAndGet(plan.state().ordinal());
        if (plan.state() == ControllerState.EMERGENCY && lastState != ControllerState.EMERGENCY) {
            emergencies.incrementAndGet();
        }
        lastState = plan.state();
        lastPlan = plan;
        List<TokenGrant> grants = plan.grants();
        for (int i = 0; i < read.size(); i++) {
            Tracked t = read.get(i);
            Tenant tenant = t.tenant;
            // What the previous period allowed by its end: the hook released a paced refill up to there itself.
            long previous = Math.max(tenant.block().tokensGranted(tenant.device()),
                    tenant.block().pacedUntil(tenant.device()));
            long base = Math.min(previous, t.lastLaunched); // this period's reading, validated
            long tokens = grants.get(i).tokens();
            // Pacing protects SLO neighbours; without one (NONE) there is nobody to protect. A parked tenant runs on
            // what is left over, as best-effort work does, whatever its priority.
            boolean paced = (!tenant.sloSensitive() || tenant.parked()) && plan.state() != ControllerState.NONE;
            // Written before the grant and the heartbeat: a hook reading in between runs ahead by at most
            // this period's tokens, never past the period's end.
            tenant.block().setTokensPerPeriod(tenant.device(), tokens);
            tenant.block().setPacedRefill(tenant.device(), base + tokens, paced ? steps : 1);
            tenant.block().grantTokens(tenant.device(), base + (paced ? tokens / steps : tokens));
            tenant.block().setYieldMicros(tenant.device(), grants.get(i).yields() ? yieldMicros : 0);
            tenant.block().setState(tenant.device(), plan.state().ordinal());
            tenant.block().heartbeat(monotonicNanos);
        }
        lastTickNanos.set(monotonicNanos);
        return plan;
    }
}
