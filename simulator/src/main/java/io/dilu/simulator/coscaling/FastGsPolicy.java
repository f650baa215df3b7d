package io.dilu.simulator.coscaling;

/**
 * FaST-GS+ as the paper describes FaST-GShare's scaling (§3.4: "launches or terminates function instances
 * reactively as workloads increase or drop"): each second, as many instances as that second's rate needs
 * at a static MPS share (the SM request).
 */
public record FastGsPolicy(FunctionProfile profile) implements CoScalingPolicy.AtRequest {

    @Override
    public String name() {
        return "fastgs";
    }

    @Override
    public int desired(double[] rates, int now, int ready, int starting) {
        return (int) Math.ceil(rates[now] / profile.rpsAtRequest() - 1e-9);
    }

}
