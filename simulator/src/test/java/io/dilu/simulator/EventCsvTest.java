package io.dilu.simulator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.StringReader;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;

class EventCsvTest {

    @Test
    void readsStartsAndStopsInTimeOrder() throws Exception {
        List<EventCsv.Event> events = EventCsv.read(new StringReader("""
                time_s,action,instance,function,type,gpus,sm_request,sm_limit,memory_gb
                0,start,a,resnet,inference,1,0.25,0.45,6
                1.5,start,t,bert-train,training,2,0.4,0.6,20
                # a comment
                2,stop,a,,,,,,
                """));
        assertThat(events).hasSize(3);
        assertThat(events.get(1)).isInstanceOfSatisfying(EventCsv.Start.class, s -> {
            assertThat(s.asked().gpus()).isEqualTo(2);
            assertThat(s.asked().function()).isEqualTo("bert-train");
            assertThat(s.asked().memoryMib()).isEqualTo(20 * 1024);
        });
        assertThat(events.get(2)).isEqualTo(new EventCsv.Stop(2, "a"));
    }

    @Test
    void everyBadRowIsReportedWithItsLineAndNothingIsReturned() {
        assertThatThrownBy(() -> EventCsv.read(new StringReader("""
                time_s,action,instance,function,type,gpus,sm_request,sm_limit,memory_gb
                5,start,a,f,inference,1,0.25,0.45,6
                4,start,b,f,inference,1,0.25,0.45,6
                6,pause,a,,,,,,
                7,stop,nobody,,,,,,
                8,start,a,f,inference,1,0.25,0.45,6
                9,start,c,f,gpu,0,0.5,0.4,6
                10,stop,a,,,,,,
                11,stop,a,,,,,,
                12,start,d
                """))).isInstanceOfSatisfying(InstanceCsv.InvalidCsvException.class, e -> assertThat(e.problems())
                .containsExactly(
                        "line 3: time_s=4 is earlier than the row before (5.0): rows must be in time order",
                        "line 4: action='pause' is not allowed: must be start or stop",
                        "line 5: instance nobody stops before it started",
                        "line 6: instance a starts a second time",
                        "line 7: type='gpu' is not allowed: must be one of inference, llm-inference, training",
                        "line 7: gpus=0 is not allowed: must be in 1..64",
                        "line 7: sm_limit=0.4 is not allowed: must be in 0.5..1.0 (sm_request..1)",
                        "line 9: instance a stops a second time",
                        "line 10: 3 columns, expected 9 (" + EventCsv.HEADER + ")"));
    }

    @Test
    void aGeneratedListReadsBackAsWritten() throws Exception {
        List<EventCsv.Event> generated = EventGenerator.paperMix(200, 7);
        StringWriter text = new StringWriter();
        EventCsv.write(text, generated);
        List<EventCsv.Event> read = EventCsv.read(new StringReader(text.toString()));
        assertThat(read).hasSize(400);
        assertThat(read).extracting(EventCsv.Event::instance)
                .containsExactlyElementsOf(generated.stream().map(EventCsv.Event::instance).toList());
        assertThat(read).extracting(EventCsv.Event::timeS)
                .containsExactlyElementsOf(generated.stream().map(EventCsv.Event::timeS).toList());
    }
}
