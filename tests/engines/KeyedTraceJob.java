// A keyed Flink job over a trace, keyed exactly as `albic stats` keys it, for the tests that hold
// albic against a running Flink (test_flink_live.py; compiled there with javac against Flink's jars).
//
//   KeyedTraceJob EVENTS.csv KEY_COLUMNS OPERATOR MAX_PARALLELISM RATE
//
// The key of an event is the text of its KEY_COLUMNS (comma-separated names) joined by "|"; an event
// with any of them empty or "NA" (albic's default null values) has no key and is left out, as albic
// leaves it out. The CSV is split on commas, so a quoted cell is refused rather than misread.
// RATE 0 emits the trace once and then keeps the job running with nothing more to send (a bounded
// input whose counts are exact, in a job whose metrics stay readable); RATE > 0 repeats the trace at
// RATE records per second for ever (a job to rescale). The source runs at parallelism 1 and its
// position is in every savepoint; the keyed operator, named OPERATOR, counts records per key in
// keyed state, so a rescale moves real state.

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

public class KeyedTraceJob {
    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            throw new IllegalArgumentException("usage: KeyedTraceJob EVENTS.csv KEY_COLUMNS OPERATOR MAX_PARALLELISM RATE");
        }
        String[] keys = readKeys(args[0], args[1].split(","));
        String operator = args[2];
        double rate = Double.parseDouble(args[4]);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setMaxParallelism(Integer.parseInt(args[3]));
        RateLimiterStrategy limiter = rate > 0 ? RateLimiterStrategy.perSecond(rate) : new Once(keys.length);
        DataGeneratorSource<String> source =
            new DataGeneratorSource<>(new Cycle(keys), Long.MAX_VALUE, limiter, Types.STRING);
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "trace").setParallelism(1).uid("trace")
            .keyBy(key -> key)
            .process(new Count()).name(operator).uid(operator)
            .sinkTo(new DiscardingSink<>()).name("discard").uid("discard");
        env.execute("albic keyed trace: " + operator);
    }

    static String[] readKeys(String csv, String[] columns) throws Exception {
        List<String> lines = Files.readAllLines(Paths.get(csv), StandardCharsets.UTF_8);
        List<String> header = List.of(lines.get(0).split(",", -1));
        int[] at = new int[columns.length];
        for (int i = 0; i < columns.length; i++) {
            at[i] = header.indexOf(columns[i]);
            if (at[i] < 0) throw new IllegalArgumentException(csv + " has no column " + columns[i]);
        }
        List<String> keys = new ArrayList<>();
        for (String line : lines.subList(1, lines.size())) {
            if (line.indexOf('"') >= 0) throw new IllegalArgumentException("a quoted cell in " + csv + ": " + line);
            String[] cells = line.split(",", -1);
            List<String> parts = new ArrayList<>();
            for (int column : at) parts.add(cells[column]);
            if (parts.contains("") || parts.contains("NA")) continue;
            keys.add(String.join("|", parts));
        }
        return keys.toArray(new String[0]);
    }

    /** Record i of the stream is event i modulo the trace's length. */
    static class Cycle implements GeneratorFunction<Long, String> {
        private final String[] keys;

        Cycle(String[] keys) { this.keys = keys; }

        @Override
        public String map(Long index) { return keys[(int) (index % keys.length)]; }
    }

    /** Grants the trace's records, then a permit that never comes: the source idles, the job runs on. */
    static class Once implements RateLimiterStrategy {
        private final long permits;

        Once(long permits) { this.permits = permits; }

        @Override
        public RateLimiter createRateLimiter(int parallelism) {
            return new RateLimiter() {
                private long granted;

                @Override
                public CompletionStage<Void> acquire(int count) {
                    granted += count;
                    return granted <= permits ? CompletableFuture.completedFuture(null) : new CompletableFuture<>();
                }
            };
        }
    }

    static class Count extends KeyedProcessFunction<String, String, String> {
        private transient ValueState<Long> seen;

        @Override
        public void open(OpenContext context) {
            seen = getRuntimeContext().getState(new ValueStateDescriptor<>("seen", Types.LONG));
        }

        @Override
        public void processElement(String key, Context context, Collector<String> out) throws Exception {
            Long count = seen.value();
            seen.update(count == null ? 1L : count + 1);
        }
    }
}
