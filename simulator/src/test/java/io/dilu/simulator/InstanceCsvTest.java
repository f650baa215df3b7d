package io.dilu.simulator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.StringReader;
import java.util.List;
import org.junit.jupiter.api.Test;

class InstanceCsvTest {

    @Test
    void readsRowsInArrivalOrder() throws Exception {
        List<SimInstance> rows = InstanceCsv.read(new StringReader("""
                type,gpus,sm_request,sm_limit,memory_gb
                inference,1,0.25,0.45,6
                # a comment
                training,4,0.5,0.7,30.5
                llm-inference,1,0.4,0.6,24
                """));
        assertThat(rows).extracting(SimInstance::type)
                .containsExactly(InstanceType.INFERENCE, InstanceType.TRAINING, InstanceType.LLM_INFERENCE);
        assertThat(rows.get(1).gpus()).isEqualTo(4);
        assertThat(rows.get(1).memoryMib()).isEqualTo(31_232);
        assertThat(rows.get(1).toRequest().requestMilli()).isEqualTo(500);
        assertThat(rows.get(2).toRequest().splittable()).isTrue();
        assertThat(rows).extracting(SimInstance::function).doesNotHaveDuplicates();
    }

    @Test
    void anOptionalFunctionColumnGroupsInstances() throws Exception {
        List<SimInstance> rows = InstanceCsv.read(new StringReader("""
                type,gpus,sm_request,sm_limit,memory_gb,function
                inference,1,0.25,0.45,6,resnet
                inference,1,0.25,0.45,6,resnet
                """));
        assertThat(rows).extracting(SimInstance::function).containsExactly("resnet", "resnet");
    }

    @Test
    void reportsEveryBadRowWithItsLineNumber() {
        assertThatThrownBy(() -> InstanceCsv.read(new StringReader("""
                type,gpus,sm_request,sm_limit,memory_gb
                inference,1,0.25,0.45,6
                gpu-miner,1,0.25,0.45,6
                inference,0,0.25,0.45,6
                inference,1,0.5,0.3,6
                inference,1,abc,0.45,6
                inference,1,0.25,0.45
                inference,1,0.25,0.45,-2
                """)))
                .isInstanceOf(InstanceCsv.InvalidCsvException.class)
                .satisfies(e -> assertThat(((InstanceCsv.InvalidCsvException) e).problems()).containsExactly(
                        "line 3: type='gpu-miner' is not allowed: must be one of inference, llm-inference, training",
                        "line 4: gpus=0 is not allowed: must be in 1..64",
                        "line 5: sm_limit=0.3 is not allowed: must be in 0.5..1.0 (sm_request..1)",
                        "line 6: sm_request='abc' is not a number",
                        "line 7: 4 columns, expected 5",
                        "line 8: memory_gb=-2 is not allowed: must be in 0.001..1024.0"));
    }

    @Test
    void refusesAWrongHeaderOrAnEmptyFile() {
        assertThatThrownBy(() -> InstanceCsv.read(new StringReader("kind,gpus\ninference,1\n")))
                .hasMessageStartingWith("line 1: header is 'kind,gpus', expected type,gpus,sm_request,sm_limit,memory_gb");
        assertThatThrownBy(() -> InstanceCsv.read(new StringReader(""))).hasMessageContaining("empty file");
        assertThatThrownBy(() -> InstanceCsv.read(new StringReader(InstanceCsv.HEADER + "\n")))
                .hasMessageContaining("no instances");
    }
}
