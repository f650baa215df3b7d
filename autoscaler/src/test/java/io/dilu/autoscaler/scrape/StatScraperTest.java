package io.dilu.autoscaler.scrape;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.autoscaler.scrape.proto.Stat;
import org.junit.jupiter.api.Test;

class StatScraperTest {

    @Test
    void ratesAreWhatThePodServedItselfAndGarbageIsNoRate() {
        byte[] stat = Stat.newBuilder().setPodName("p").setRequestCount(12).setProxiedRequestCount(2).build().toByteArray();
        assertThat(StatScraper.rps(stat)).hasValue(10.0);
        assertThat(StatScraper.rps("# HELP not protobuf\n".getBytes())).isEmpty();
        assertThat(StatScraper.rps(Stat.newBuilder().setRequestCount(-3).build().toByteArray())).isEmpty();
    }

    @Test
    void largeRevisionsAreSampled() {
        assertThat(StatScraper.sampleSize(2)).isEqualTo(2);
        assertThat(StatScraper.sampleSize(10)).isEqualTo(10);
        assertThat(StatScraper.sampleSize(100)).isEqualTo(80);
        assertThat(StatScraper.sampleSize(10_000)).isLessThan(400).isGreaterThan(300);
    }
}
