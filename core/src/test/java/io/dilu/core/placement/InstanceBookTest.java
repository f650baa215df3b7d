package io.dilu.core.placement;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class InstanceBookTest {

    static final Instant T0 = Instant.parse("2026-12-02T10:00:00Z");
    static final NodeInventory NODE = NodeInventory.uniform("n", 1, "A100", 40_960, 108);
    static final String GPU = NODE.gpus().getFirst().uuid();

    static InstanceBook book() {
        return new InstanceBook(new ComplementaryPlacement(), new ClusterState(List.of(NODE)));
    }

    static PlacementDecision.Placed on(int requestPercent, int limitPercent, long memoryMib) {
        return new PlacementDecision.Placed("n", List.of(new Slot(GPU, requestPercent * 10, limitPercent * 10, memoryMib)));
    }

    static InstanceRequest ask(String id, int requestPercent, long memoryMib) {
        return new InstanceRequest(id, "f-" + id, 1, requestPercent * 10, requestPercent * 10, memoryMib, false);
    }

    @Test
    void aParkedInstanceHoldsItsMemoryAloneAndWakesOnlyWhereItsSharesFitAgain() {
        InstanceBook book = book();
        book.book("a", "t", "f", on(50, 50, 10_000));
        book.park("a", T0);
        assertThat(book.state().usage(GPU).requestMilli()).as("its SMs went back").isZero();
        assertThat(book.state().usage(GPU).memoryMib()).as("its memory stays").isEqualTo(10_000);
        assertThat(book.smRequestMilli()).isZero();
        book.book("b", "t", "f", on(60, 60, 10_000));
        assertThat(book.wake("a")).as("50% beside 60% is over Ω").hasValueSatisfying(r -> assertThat(r)
                .startsWith("no room to serve again: GPU " + GPU + " would hold SM request 110%"));
        assertThat(book.booking("a").orElseThrow().parked()).as("refused, it stays parked").isTrue();
        assertThat(book.state().usage(GPU).requestMilli()).isEqualTo(600);
        book.release("b");
        assertThat(book.wake("a")).isEmpty();
        assertThat(book.booking("a").orElseThrow()).satisfies(b -> {
            assertThat(b.parked()).isFalse();
            assertThat(b.refusal()).isEmpty();
        });
        assertThat(book.state().usage(GPU).requestMilli()).isEqualTo(500);
    }

    @Test
    void aPlacementWithoutRoomTakesParkedMemoryAndOnlyWhenThatMakesIt() {
        InstanceBook book = book();
        book.book("old", "t", "f", on(10, 10, 15_000));
        book.park("old", T0);
        book.book("new", "t", "f", on(10, 10, 15_000));
        book.park("new", T0.plusSeconds(60));
        // 10,960 MiB free: 20,000 needs one parked instance's memory, the least recently parked's.
        InstanceBook.Placement p = book.place(ask("x", 30, 20_000), "t", Optional.empty());
        assertThat(p.decision()).isInstanceOf(PlacementDecision.Placed.class);
        assertThat(p.evicted()).extracting(InstanceBook.Evicted::id).containsExactly("old");
        assertThat(book.booking("old")).as("out of the book for good").isEmpty();
        assertThat(book.state().usage(GPU).memoryMib()).as("the placement is not booked by place").isEqualTo(15_000);

        book.book("busy", "t", "f", on(90, 90, 1_000));
        InstanceBook.Placement none = book.place(ask("y", 30, 30_000), "t", Optional.empty());
        assertThat(none.decision()).as("memory alone would not do: the SMs are booked up").isInstanceOf(
                PlacementDecision.Infeasible.class);
        assertThat(none.evicted()).isEmpty();
        assertThat(book.booking("new")).as("booked again as it was").hasValueSatisfying(b -> assertThat(b.parked()).isTrue());
        assertThat(book.state().usage(GPU).memoryMib()).isEqualTo(16_000);
    }

    @Test
    void aGpuOnlyParkedInstancesHoldGoesBackUnlessOneOfThemIsKept() {
        InstanceBook book = book();
        book.book("a", "t", "f", on(20, 20, 5_000));
        book.book("b", "t", "f", on(20, 20, 5_000));
        book.park("a", T0);
        assertThat(book.handBack()).as("b still serves there").isEmpty();
        book.park("b", T0.plusSeconds(1));
        assertThat(book.parkedOnlyGpus()).isEqualTo(1);
        book.keep("b", true);
        assertThat(book.handBack()).as("b is its revision's last, kept").isEmpty();
        book.keep("b", false);
        assertThat(book.handBack()).extracting(InstanceBook.Evicted::id).containsExactlyInAnyOrder("a", "b");
        assertThat(book.state().activeGpuCount()).isZero();
        assertThat(book.parkedOnlyGpus()).isZero();
    }

    @Test
    void aBookingTheStateRefusesIsKeptAndBookedWhenTheStateIsRebuilt() {
        InstanceBook book = new InstanceBook(new ComplementaryPlacement(), new ClusterState(List.of()));
        assertThat(book.bookParked("a", "t", "f", on(20, 20, 5_000), T0)).as("no inventory lists the GPU yet").isFalse();
        assertThat(book.inState("a")).isFalse();
        assertThat(book.wake("a")).as("a wake off the book is refused, not guessed")
                .hasValueSatisfying(r -> assertThat(r).contains("not in the book"));
        book.rebuild(new ClusterState(List.of(NODE)));
        assertThat(book.inState("a")).isTrue();
        assertThat(book.state().usage(GPU).memoryMib()).isEqualTo(5_000);
    }
}
