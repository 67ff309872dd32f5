package e2e;

import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A stateful word count under {@code processing.guarantee=exactly_once_v2}: input lines (values)
 * are split into words, regrouped by word (a repartition topic) and counted (a store backed by a
 * changelog); every count update goes to OUTPUT (key: word, value: count as a long). The store
 * cache is off, so each word of the input yields exactly one update. A stream thread that dies
 * (e.g. on a timeout while the broker is down) is replaced: exactly-once must hold across that
 * too. Prints {"state": ...} on each state change and {"replaced": "..."} per replaced thread.
 * Runs until stdin closes, then closes cleanly.
 *
 * Usage: EosWordCount BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR
 */
public final class EosWordCount {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], appId = args[1], input = args[2], output = args[3], stateDir = args[4];
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
        // After a broker restart a rebalance can wait for a member that will not come back (a
        // thread's old member id); 10 s instead of 45 s keeps the test short.
        props.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 10_000);
        props.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 2_000);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.split(" ")))
            .groupBy((key, word) -> word, Grouped.with("by-word", Serdes.String(), Serdes.String()))
            .count()
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("{\"state\":\"" + now + "\"}");
            System.out.flush();
            if (now == KafkaStreams.State.ERROR) {
                done.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("{\"replaced\":\"" + e.getClass().getSimpleName() + "\"}");
            System.out.flush();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
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
