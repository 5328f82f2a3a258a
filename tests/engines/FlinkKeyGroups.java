// Prints what Flink's own KeyGroupRangeAssignment computes, for tests/engines/test_flink_jvm.py.
// Usage: java -cp flink-dist.jar FlinkKeyGroups.java KEYS.txt TYPE MAXP... (TYPE: string, int, long)
// One output line per key: its key group at each max parallelism, tab-separated.
// The other modes take no keys file (pass "-") and print whitespace-separated integers:
//   ranges MAXP...    for each MAXP, each parallelism p in 1..MAXP and each subtask s < p:
//                     start and end of computeKeyGroupRangeForOperatorIndex(MAXP, p, s)
//   subtasks MAXP...  for each MAXP, each p in 1..MAXP and each key group g < MAXP:
//                     computeOperatorIndexForKeyGroup(MAXP, p, g)
//   defaults FIRST LAST   computeDefaultMaxParallelism(p) for each p in FIRST..LAST
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
                for (int p = 1; p <= maxP; p++) {
                    for (int s = 0; s < p; s++) {
                        KeyGroupRange r = KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(maxP, p, s);
                        out.append(r.getStartKeyGroup()).append(' ').append(r.getEndKeyGroup()).append('\n');
                    }
                }
            }
        } else if (type.equals("subtasks")) {
            for (int maxP : maxPs) {
                for (int p = 1; p <= maxP; p++) {
                    for (int g = 0; g < maxP; g++) {
                        out.append(KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup(maxP, p, g)).append(' ');
                    }
                    out.append('\n');
                }
            }
        } else if (type.equals("defaults")) {
            for (int p = maxPs[0]; p <= maxPs[1]; p++) {
                out.append(KeyGroupRangeAssignment.computeDefaultMaxParallelism(p)).append('\n');
            }
        } else {
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
        }
        System.out.print(out);
    }
}
