package io.dilu.simulator.coscaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

import io.dilu.kube.profile.ProfileStatus;
import io.dilu.trials.EmulatedModels;
import io.dilu.trials.LocalProfiling;
import io.dilu.trials.ProfileFile;
import io.dilu.trials.TestingEmulatedGpu;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

public class FunctionProfilesTest {

    /** A profiled GpuFunctionProfile as kubectl get gfp resnet -n fns -o yaml prints it (server fields and all). */
    public static final String KUBECTL_YAML = """
            apiVersion: dilu.io/v1alpha1
            kind: GpuFunctionProfile
            metadata:
              creationTimestamp: "2026-11-24T10:00:00Z"
              generation: 1
              managedFields:
              - apiVersion: dilu.io/v1alpha1
                fieldsType: FieldsV1
                manager: kubectl-create
              name: resnet
              namespace: fns
              resourceVersion: "1234"
              uid: 0b6f7a2e-1111-2222-3333-444455556666
            spec:
              function: resnet
              image: registry.example/resnet:1
              sloMillis: 200
              type: inference
            status:
              batchSize: 8
              conditions:
              - lastTransitionTime: "2026-11-24T10:02:00Z"
                message: SM 20% (limit 40%), batch 8, after 8 trials
                observedGeneration: 1
                reason: Profiled
                status: "True"
                type: Ready
              memoryMiB: 2300
              observedGeneration: 1
              searchTrials: 8
              servingThroughputRps: 160
              servingThroughputRpsAtLimit: 280
              smLimit: 40
              smRequest: 20
              trials:
              - {smPercent: 20, batchSize: 8, latencyMillis: 50, throughput: 160, memoryMiB: 2300, pod: resnet-sm20-b8-0}
              - {smPercent: 40, batchSize: 8, latencyMillis: 28.57, throughput: 280, memoryMiB: 2300, pod: resnet-sm40-b8-0}
            """;

    @TempDir
    Path dir;

    private static FunctionProfile read(String text) throws Exception {
        return FunctionProfiles.of(ProfileFile.read(text, "p.yaml"), 8);
    }

    @Test
    void aProfiledStatusAsKubectlPrintsItGivesTheFunction() throws Exception {
        FunctionProfile f = read(KUBECTL_YAML);
        assertThat(f.name()).isEqualTo("resnet");
        assertThat(f.sloSeconds()).isEqualTo(0.2);
        assertThat(f.serviceSeconds()).as("the trial at the request and batch").isEqualTo(0.05);
        assertThat(f.rpsAtRequest()).isEqualTo(160);
        assertThat(f.rpsAtLimit()).isEqualTo(280);
        assertThat(f.requestShare()).isEqualTo(0.2);
        assertThat(f.limitShare()).isEqualTo(0.4);
        assertThat(f.memoryMiB()).isEqualTo(2300);
        assertThat(f.coldStartSeconds()).isEqualTo(8);
        // Not measured at SM 100: Amdahl through (20%, 50 ms) and (40%, 28.6 ms) a batch, a + b / share.
        double b = (0.05 - 8.0 / 280) / (1 / 0.2 - 1 / 0.4);
        double a = 0.05 - b / 0.2;
        assertThat(f.rpsAtWholeGpu()).isCloseTo(8 / (a + b), offset(1e-9)).isCloseTo(509.1, offset(0.1));
    }

    @Test
    void jsonAListOfOneAndAHandWrittenSpecReadAlike() throws Exception {
        String json = """
                {"apiVersion": "dilu.io/v1alpha1", "kind": "GpuFunctionProfile", "metadata": {"name": "bert"},
                 "spec": {"function": "bert", "sloMillis": 130, "smRequest": 10, "memoryMiB": 700, "batchSize": 4,
                          "servingThroughputRps": 61.7, "servingThroughputRpsAtLimit": 123.4}}
                """;
        FunctionProfile f = read(json);
        assertThat(f.limitShare()).as("2 x the request when the spec gives none").isEqualTo(0.2);
        assertThat(f.serviceSeconds()).as("batch / rate without a trial").isCloseTo(4 / 61.7, offset(1e-12));
        assertThat(f.rpsAtWholeGpu()).as("linear speed-up through the limit's point").isCloseTo(123.4 / 0.2, offset(1e-9));

        String list = "apiVersion: v1\nkind: List\nitems:\n- " + KUBECTL_YAML.replace("\n", "\n  ").strip() + "\n";
        assertThat(read(list)).isEqualTo(read(KUBECTL_YAML));
        assertThat(FunctionProfiles.named(Files.writeString(dir.resolve("p.json"), json).toString(), 3).coldStartSeconds())
                .isEqualTo(3);
    }

    /** What {@code ./dilu profile --local --out DIR} writes (trials' LocalProfiling, on the emulator's arithmetic). */
    @Test
    void theProfilesLocalProfilingWritesAreRead() throws Exception {
        new LocalProfiling(new PrintWriter(new StringWriter()), TestingEmulatedGpu::new)
                .run(List.of(EmulatedModels.BERT_LARGE, EmulatedModels.RESNET50_TRAINING), dir.resolve("profiles"));

        ProfileFile.Read read = ProfileFile.read(Files.readString(dir.resolve("profiles/bert-large.yaml")), "bert-large.yaml");
        ProfileStatus s = read.profile().getStatus();
        FunctionProfile f = FunctionProfiles.of(read, 8);
        assertThat(f.rpsAtRequest()).isEqualTo(s.servingThroughputRps());
        assertThat(f.rpsAtLimit()).isEqualTo(s.servingThroughputRpsAtLimit());
        assertThat(f.sloSeconds()).isEqualTo(0.13);

        ProfileFile.Read training = ProfileFile.read(Files.readString(dir.resolve("profiles/resnet50-train.yaml")), "t.yaml");
        assertThatThrownBy(() -> FunctionProfiles.of(training, 8)).hasMessageStartingWith("t.yaml:10: spec.type must be inference");
    }

    @Test
    void midSizeAndTheShippedProfileAreNamedAndAMissingFileSaysSo() throws Exception {
        assertThat(FunctionProfiles.named("mid-size", 8)).isEqualTo(FunctionProfile.midSize("f"));
        assertThat(FunctionProfiles.named("bert-large", 8)).isEqualTo(FunctionProfiles.bench());
        assertThatThrownBy(() -> FunctionProfiles.named(dir.resolve("none.yaml").toString(), 8)).isInstanceOf(NoSuchFileException.class);
    }

    @Test
    void everyFaultNamesTheFieldAndItsLine() {
        assertThatThrownBy(() -> read(KUBECTL_YAML.replace("servingThroughputRpsAtLimit: 280", "servingThroughputRpsAtLimit: 150")))
                .hasMessage("p.yaml:32: status.servingThroughputRpsAtLimit must be a number in 160..1e7, at least "
                        + "status.servingThroughputRps (a larger share does not serve less), got 150.0");
        assertThatThrownBy(() -> read(KUBECTL_YAML.replace("  servingThroughputRpsAtLimit: 280\n", "")))
                .hasMessageStartingWith("p.yaml:19: status.servingThroughputRpsAtLimit is missing: the co-scaling model needs "
                        + "what an instance serves at its SM limit");
        assertThatThrownBy(() -> read(KUBECTL_YAML.replace("sloMillis: 200", "sloMillis: soon")))
                .hasMessage("p.yaml:17: spec.sloMillis must be an integer, got 'soon'");
        assertThatThrownBy(() -> read(KUBECTL_YAML.replace("  sloMillis: 200\n", "")))
                .hasMessageStartingWith("p.yaml:14: spec.sloMillis must be an integer in 1..3600000");
        assertThatThrownBy(() -> read(KUBECTL_YAML.replace("latencyMillis: 50,", "latencyMillis: -5,")))
                .hasMessage("p.yaml:36: status.trials.0.latencyMillis must be a number in (0, 3600000] (ms), got -5.0");
        assertThatThrownBy(() -> read(KUBECTL_YAML.replace("status: \"True\"", "status: \"False\"")))
                .hasMessageStartingWith("p.yaml:21: status.conditions must have Ready=True");
        assertThatThrownBy(() -> read(KUBECTL_YAML.replace("  observedGeneration: 1\n  searchTrials", "  observedGeneration: 0\n  searchTrials")))
                .hasMessageStartingWith("p.yaml:29: status.observedGeneration must be metadata.generation (1)");
        assertThatThrownBy(() -> read(KUBECTL_YAML.replace("kind: GpuFunctionProfile", "kind: Pod")))
                .hasMessage("p.yaml:2: kind must be GpuFunctionProfile, got Pod");
        assertThatThrownBy(() -> read(KUBECTL_YAML.replace("smLimit: 40", "smLimit: 15")))
                .hasMessage("p.yaml:33: status.smLimit must be an integer percent in 20..100 (smRequest..100), got 15");
        assertThatThrownBy(() -> read("spec: [unclosed")).hasMessageStartingWith("p.yaml:1: not YAML or JSON");
        assertThatThrownBy(() -> read("")).hasMessage("p.yaml:1: the file is empty: it must hold a GpuFunctionProfile");
        assertThatThrownBy(() -> read("just a line")).hasMessageStartingWith("p.yaml:1: the file must hold a GpuFunctionProfile");
        assertThatThrownBy(() -> read("~")).hasMessage("p.yaml:1: the file must hold a GpuFunctionProfile, not null");
        assertThatThrownBy(() -> read("apiVersion: v1\nkind: List\nitems: []\n"))
                .hasMessageStartingWith("p.yaml:3: items must hold exactly one GpuFunctionProfile, got 0");
    }
}
