package e2e;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;

/**
 * A stateful topology: input records (key: user, value: word) are regrouped by word and counted
 * (a repartition topic and a count store backed by a compacted changelog), and counted per user
 * in one-hour tumbling windows (a windowed store and its changelog). Both counts go to output
 * topics. Runs until stdin closes, then closes cleanly (commits).
 *
 * Usage: CountApp BOOTSTRAP APPLICATION_ID INPUT STATE_DIR
 */
public final class CountApp {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], appId = args[1], input = args[2], stateDir = args[3];
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 500);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> records = builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()));
        records.groupBy((user, word) -> word, Grouped.with("by-word", Serdes.String(), Serdes.String()))
            .count()
            .toStream()
            .to(input + "-word-counts", Produced.with(Serdes.String(), Serdes.Long()));
        records.groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofHours(1)))
            .count()
            .toStream()
            .map((window, count) -> KeyValue.pair(window.key() + "@" + window.window().start(), count))
            .to(input + "-user-counts", Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("{\"state\":\"" + now + "\"}");
            System.out.flush();
            if (now == KafkaStreams.State.ERROR) {
                done.countDown();
            }
        });
        streams.start();
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                }
            } catch (Exception ignored) {
            }
            done.countDown();
        });
        stdin.setDaemon(true);
        stdin.start();
        done.await();
        streams.close(Duration.ofSeconds(30));
        System.out.println("{\"closed\":true}");
    }
}
