package io.dilu.testing;

import io.quarkus.runtime.configuration.DurationConverter;
import io.smallrye.config.PropertiesConfigSource;
import io.smallrye.config.SmallRyeConfig;
import io.smallrye.config.SmallRyeConfigBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URL;
import java.time.Duration;
import java.util.Map;

/**
 * A Quarkus module's configuration mappings read outside Quarkus as the module reads them: durations written the
 * Quarkus way ("5ms", which SmallRye alone does not read), no profile. For tests and benches that must hold or run
 * what a module ships.
 */
public final class ShippedConfig {

    private ShippedConfig() {}

    /** The mappings' own defaults, nothing else. */
    public static SmallRyeConfig defaults(Class<?>... mappings) {
        return builder(mappings).build();
    }

    /** The mapping as its module reads it: its defaults, the application.properties beside it, {@code keys} over both. */
    public static <T> T read(Class<T> mapping, Map<String, String> keys) {
        return withProperties(keys, mapping).getConfigMapping(mapping);
    }

    /** The mappings' defaults, the application.properties beside the first of them, and {@code keys} over both. */
    public static SmallRyeConfig withProperties(Map<String, String> keys, Class<?>... mappings) {
        URL properties = mappings[0].getResource("/application.properties");
        try {
            return builder(mappings).withSources(new PropertiesConfigSource(properties, 100))
                    .withSources(new PropertiesConfigSource(keys, "test", 200)).build();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + properties, e);
        }
    }

    private static SmallRyeConfigBuilder builder(Class<?>... mappings) {
        SmallRyeConfigBuilder builder = new SmallRyeConfigBuilder().withConverter(Duration.class, 200, new DurationConverter());
        for (Class<?> mapping : mappings) {
            builder.withMapping(mapping);
        }
        return builder;
    }
}
