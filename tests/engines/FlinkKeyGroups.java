// Prints what Flink's own KeyGroupRangeAssignment computes, for tests/engines/test_flink_jvm.py.
// Usage: java -cp flink-dist.jar FlinkKeyGroups.java KEYS.txt TYPE MAXP... (TYPE: string, int, long)
// One output line per key: its key group at each max parallelism, tab-separated.
// With TYPE "ranges" (no keys file, pass "-"): for each MAXP and each parallelism p in 1..min(MAXP, 70),
// prints "maxP p subtask start end" per subtask and "maxP p g subtask" per key group.
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;

public class FlinkKeyGroups {
    public static void main(String[] args) throws Exception {
        String type = args[1];
        int[] maxPs = new int[args.length - 2];
        for (int i = 2; i < args.length; i++) maxPs[i - 2] = Integer.parseInt(args[i]);
        StringBuilder out = new StringBuilder();
        if (type.equals("ranges")) {
            for (int maxP : maxPs) {
                for (int p = 1; p <= Math.min(maxP, 70); p++) {
                    for (int s = 0; s < p; s++) {
                        KeyGroupRange r = KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(maxP, p, s);
                        out.append("R ").append(maxP).append(' ').append(p).append(' ').append(s).append(' ')
                           .append(r.getStartKeyGroup()).append(' ').append(r.getEndKeyGroup()).append('\n');
                    }
                    for (int g = 0; g < maxP; g++) {
                        out.append("S ").append(maxP).append(' ').append(p).append(' ').append(g).append(' ')
                           .append(KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup(maxP, p, g)).append('\n');
                    }
                }
            }
            System.out.print(out);
            return;
        }
        List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
        for (String line : lines) {
            Object key;
            if (type.equals("string")) key = line;
            else if (type.equals("int")) key = Integer.valueOf(Integer.parseInt(line));
            else key = Long.valueOf(Long.parseLong(line));
            for (int i = 0; i < maxPs.length; i++) {
                if (i > 0) out.append('\t');
                out.append(KeyGroupRangeAssignment.assignToKeyGroup(key, maxPs[i]));
            }
            out.append('\n');
        }
        System.out.print(out);
    }
}
