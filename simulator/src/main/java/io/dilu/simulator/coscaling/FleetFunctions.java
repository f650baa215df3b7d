package io.dilu.simulator.coscaling;

import io.dilu.loadgen.RateTrace;
import io.dilu.simulator.PaperMix;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The functions of the co-scaling fleet ({@link CoScalingFleet}): each its own real trace and its own profile, chosen
 * by a stated rule and a seed, never by how a policy fares on them.
 *
 * <ul>
 *   <li><b>Inference</b>: the Azure Functions 2019 sample's HTTP-triggered functions invoked in at least half of its
 *       480 minutes (18; {@code coscaling/fleet/azure-functions-2019-http.csv}, README beside it). A minute's
 *       invocations arrive at uniformly drawn seconds of it (a Poisson process given the minute's count).
 *   <li><b>LLM inference</b>: ServeGen's clients of its language models active in every 10-minute window of the first
 *       8 hours of day 1 (75; {@code servegen-language.csv}). A window's requests arrive with inter-arrival times drawn
 *       from the window's fitted law (Gamma or Weibull, its shape kept) stretched so that their mean is the window's
 *       measured rate: the fit's own mean is off the rate by more than 20% in a fifth of the trace's windows.
 *   <li><b>Which</b>: as many of each as asked ({@link Size}), drawn with the seed, in the ratio of the paper's mix
 *       (§5.5: 6 inference to 2 LLM instances); all 18 inference functions at the full size.
 *   <li><b>Profiles</b>: the shape of the paper's mix per type ({@link PaperMix#INFERENCE}, {@link PaperMix#LLM}): SM
 *       request a whole percent drawn in its range, the limit {@link PaperMix#LIMIT_ABOVE_REQUEST} above it, memory a
 *       whole number of GB drawn in its range; LLMs may be split into pipeline stages. The paper gives no serving rates
 *       for its mix, so every function serves as the mid-size model ({@link FunctionProfile#midSize}, the paper's
 *       profile shape): SLO 200 ms, a batch 50 ms, 50 rps at its request, 80 at its limit, 110 with a whole GPU, an
 *       8 s cold start.
 *   <li><b>Scale</b>: one factor per class, so that its functions' mean rates add up to one instance's rate at the
 *       request per function (a busy function needs several instances, the tail less than one; the traces' own
 *       rates are a few requests a minute, too few for a GPU).
 * </ul>
 */
public final class FleetFunctions {

    /** The kind of function, as the paper's mix has them and the fleet's books are kept. */
    public enum Kind {
        INFERENCE("inference"),
        LLM("llm");

        private final String label;

        Kind(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }

    /**
     * One function of the fleet.
     *
     * @param splittable whether its model may be cut into pipeline stages (LLMs)
     * @param trace its requests per second, scaled
     */
    public record Function(String name, Kind kind, FunctionProfile profile, boolean splittable, RateTrace trace) {}

    /** How many functions of each kind, over how many seconds, drawn with which seed. */
    public record Size(int inference, int llm, int seconds, long seed) {

        /** All 18 inference functions and 6 LLM clients over the 8 hours both traces cover. */
        public static final Size FULL = new Size(18, 6, 8 * 3600, 42);
        /** CI's: 6 and 2, over the first hour. */
        public static final Size SMOKE = new Size(6, 2, 3600, 42);

        public Size {
            if (inference < 0 || llm < 0 || inference + llm == 0) {
                throw new IllegalArgumentException("need at least one function, got " + inference + " inference and " + llm
                        + " LLM");
            }
            if (seconds < 1 || seconds > SECONDS) {
                throw new IllegalArgumentException("seconds must be in 1.." + SECONDS + ", got " + seconds);
            }
        }
    }

    /** The seconds both traces cover: the Azure sample's 480 minutes, ServeGen's first 48 windows. */
    static final int SECONDS = 8 * 3600;
    private static final int WINDOW_S = 600;
    private static final String AZURE = "/coscaling/fleet/azure-functions-2019-http.csv";
    private static final String SERVEGEN = "/coscaling/fleet/servegen-language.csv";

    private FleetFunctions() {}

    /** One Azure function's invocations per minute. */
    record AzureFunction(String hash, int[] perMinute) {}

    /** One ServeGen window: its measured rate and fitted inter-arrival law. */
    record Window(int startSecond, double rps, boolean gamma, double shape, double scale) {}

    /** One ServeGen client's windows. */
    record Client(String model, String id, List<Window> windows) {}

    /** The fleet of {@code size}: the same functions, profiles and rates for the same size every run. */
    public static List<Function> choose(Size size) {
        List<AzureFunction> azure = azure();
        List<Client> servegen = servegen();
        if (size.inference() > azure.size() || size.llm() > servegen.size()) {
            throw new IllegalArgumentException("the fleet has " + azure.size() + " inference and " + servegen.size()
                    + " LLM functions, asked " + size.inference() + " and " + size.llm());
        }
        SplittableRandom rnd = new SplittableRandom(size.seed());
        int[] inference = draw(rnd, azure.size(), size.inference());
        int[] llm = draw(rnd, servegen.size(), size.llm());
        double perFunction = FunctionProfile.midSize("").rpsAtRequest();
        double azureMeans = 0;
        for (int i : inference) {
            azureMeans += mean(azure.get(i).perMinute(), size.seconds());
        }
        double servegenMeans = 0;
        for (int i : llm) {
            servegenMeans += mean(servegen.get(i).windows(), size.seconds());
        }
        List<Function> out = new ArrayList<>();
        for (int i : inference) {
            AzureFunction f = azure.get(i);
            String name = "azure-" + f.hash().substring(0, 8);
            double[] rps = perSecond(f.perMinute(), inference.length * perFunction / azureMeans, size.seconds(), rnd.split());
            out.add(new Function(name, Kind.INFERENCE, profile(name, PaperMix.INFERENCE, rnd), false, new RateTrace(name, rps)));
        }
        for (int i : llm) {
            Client c = servegen.get(i);
            String name = "servegen-" + c.model() + "-" + c.id();
            double[] rps = perSecond(c.windows(), llm.length * perFunction / servegenMeans, size.seconds(), rnd.split());
            out.add(new Function(name, Kind.LLM, profile(name, PaperMix.LLM, rnd), true, new RateTrace(name, rps)));
        }
        return List.copyOf(out);
    }

    /** {@code n} of {@code 0..count-1} drawn without replacement, in ascending order (the files' order). */
    static int[] draw(SplittableRandom rnd, int count, int n) {
        int[] order = new int[count];
        Arrays.setAll(order, i -> i);
        for (int i = 0; i < n; i++) {
            int j = rnd.nextInt(i, count);
            int swap = order[i];
            order[i] = order[j];
            order[j] = swap;
        }
        int[] chosen = Arrays.copyOf(order, n);
        Arrays.sort(chosen);
        return chosen;
    }

    /** The mean rate of the first {@code seconds} of a function's minutes. */
    static double mean(int[] perMinute, int seconds) {
        double sum = 0;
        for (int m = 0; m * 60 < seconds; m++) {
            sum += perMinute[m] * Math.min(60, seconds - m * 60) / 60.0;
        }
        return sum / seconds;
    }

    /** The mean rate of the first {@code seconds} of a client's windows. */
    static double mean(List<Window> windows, int seconds) {
        double sum = 0;
        for (Window w : windows) {
            sum += w.rps() * Math.max(0, Math.min(WINDOW_S, seconds - w.startSecond()));
        }
        return sum / seconds;
    }

    /** A profile in the paper's {@code shape}, serving as the mid-size model does. */
    static FunctionProfile profile(String name, PaperMix.Shape shape, SplittableRandom rnd) {
        int request = rnd.nextInt((int) Math.round(100 * shape.requestLow()), (int) Math.round(100 * shape.requestHigh()) + 1);
        int limit = request + (int) Math.round(100 * PaperMix.LIMIT_ABOVE_REQUEST);
        long memoryMiB = 1024L * rnd.nextInt(shape.memoryGbLow(), shape.memoryGbHigh() + 1);
        FunctionProfile mid = FunctionProfile.midSize(name);
        return new FunctionProfile(name, mid.sloSeconds(), mid.serviceSeconds(), mid.rpsAtRequest(), mid.rpsAtLimit(),
                request / 100.0, limit / 100.0, mid.rpsAtWholeGpu(), mid.coldStartSeconds(), memoryMiB);
    }

    /**
     * A minute's invocations, times {@code factor}, at uniformly drawn seconds of it; the fractions of a request carry
     * over to the next minute, so the total is the scaled total.
     */
    static double[] perSecond(int[] perMinute, double factor, int seconds, SplittableRandom rnd) {
        double[] rps = new double[seconds];
        double carry = 0;
        for (int m = 0; m * 60 < seconds; m++) {
            double scaled = perMinute[m] * factor + carry;
            long requests = (long) scaled;
            carry = scaled - requests;
            int span = Math.min(60, seconds - m * 60);
            for (long i = 0; i < requests; i++) {
                int t = m * 60 + rnd.nextInt(60);
                if (t < m * 60 + span) {
                    rps[t]++;
                }
            }
        }
        return rps;
    }

    /**
     * Each window's requests at {@code factor} times its rate, at inter-arrival times of its law stretched to that
     * mean.
     */
    static double[] perSecond(List<Window> windows, double factor, int seconds, SplittableRandom rnd) {
        double[] rps = new double[seconds];
        for (Window w : windows) {
            if (w.startSecond() >= seconds) {
                break;
            }
            double mean = w.gamma() ? w.shape() : Math.exp(lnGamma(1 + 1 / w.shape()));
            double stretch = 1 / (factor * w.rps() * mean);
            double end = Math.min(seconds, w.startSecond() + WINDOW_S);
            for (double t = w.startSecond() + stretch * sample(w, rnd); t < end; t += stretch * sample(w, rnd)) {
                rps[(int) t]++;
            }
        }
        return rps;
    }

    /** A draw of the window's law at scale 1. */
    private static double sample(Window w, SplittableRandom rnd) {
        return w.gamma() ? gamma(w.shape(), rnd) : Math.pow(-Math.log(1 - rnd.nextDouble()), 1 / w.shape());
    }

    /** Gamma(shape, 1) by Marsaglia and Tsang (ACM TOMS 26(3), 2000), with their boost for a shape below 1. */
    static double gamma(double shape, SplittableRandom rnd) {
        if (shape < 1) {
            return gamma(shape + 1, rnd) * Math.pow(rnd.nextDouble(), 1 / shape);
        }
        double d = shape - 1.0 / 3;
        double c = 1 / Math.sqrt(9 * d);
        while (true) {
            double x;
            double v;
            do {
                x = rnd.nextGaussian();
                v = 1 + c * x;
            } while (v <= 0);
            v = v * v * v;
            double u = rnd.nextDouble();
            if (u < 1 - 0.0331 * x * x * x * x || Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) {
                return d * v;
            }
        }
    }

    /** ln Γ(x) for x > 0, Lanczos' approximation (g = 7, 9 terms; relative error below 1e-13). */
    static double lnGamma(double x) {
        if (x < 0.5) {
            return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - lnGamma(1 - x);
        }
        double[] c = {0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7};
        double y = x - 1;
        double a = c[0];
        double t = y + 7.5;
        for (int i = 1; i < 9; i++) {
            a += c[i] / (y + i);
        }
        return 0.5 * Math.log(2 * Math.PI) + (y + 0.5) * Math.log(t) - t + Math.log(a);
    }

    static List<AzureFunction> azure() {
        List<AzureFunction> out = new ArrayList<>();
        List<String[]> rows = read(AZURE);
        for (int i = 1; i < rows.size(); i++) {
            String[] r = rows.get(i);
            if (r.length != SECONDS / 60 + 1) {
                throw new IllegalStateException(AZURE + ":" + (i + 1) + ": need a function and " + SECONDS / 60
                        + " counts, got " + r.length + " fields");
            }
            int[] counts = new int[SECONDS / 60];
            for (int m = 0; m < counts.length; m++) {
                counts[m] = Integer.parseInt(r[m + 1]);
            }
            out.add(new AzureFunction(r[0], counts));
        }
        return List.copyOf(out);
    }

    static List<Client> servegen() {
        Map<String, List<Window>> byClient = new LinkedHashMap<>();
        Map<String, String[]> ids = new LinkedHashMap<>();
        List<String[]> rows = read(SERVEGEN);
        for (int i = 1; i < rows.size(); i++) {
            String[] r = rows.get(i);
            String key = r[0] + "/" + r[1];
            ids.putIfAbsent(key, new String[] {r[0], r[1]});
            boolean gamma = switch (r[4]) {
                case "Gamma" -> true;
                case "Weibull" -> false;
                default -> throw new IllegalStateException(SERVEGEN + ":" + (i + 1) + ": iat_dist must be Gamma or Weibull, got "
                        + r[4]);
            };
            byClient.computeIfAbsent(key, k -> new ArrayList<>()).add(new Window(Integer.parseInt(r[2]),
                    Double.parseDouble(r[3]), gamma, Double.parseDouble(r[5]), Double.parseDouble(r[6])));
        }
        List<Client> out = new ArrayList<>();
        byClient.forEach((key, windows) -> out.add(new Client(ids.get(key)[0], ids.get(key)[1], List.copyOf(windows))));
        return List.copyOf(out);
    }

    private static List<String[]> read(String resource) {
        try (InputStream in = FleetFunctions.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException(resource + " is not on the classpath");
            }
            BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            return reader.lines().filter(l -> !l.isBlank()).map(l -> l.split(",", -1)).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(resource, e);
        }
    }

    /** What the bench says of a function: "azure-0c2f8035 inference SM 27%/47%, 6 GiB, mean 12.3 rps, peak 80 rps". */
    static String describe(Function f) {
        double[] r = f.trace().rps();
        return String.format(Locale.ROOT, "%-26s %-9s SM %2.0f%%/%2.0f%%, %2d GiB, mean %6.1f rps, peak %6.0f rps", f.name(),
                f.kind().label(), 100 * f.profile().requestShare(), 100 * f.profile().limitShare(), f.profile().memoryMiB() / 1024,
                Arrays.stream(r).average().orElse(0), Arrays.stream(r).max().orElse(0));
    }
}
