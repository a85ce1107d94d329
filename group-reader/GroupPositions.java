/*
 * Where each named group is, whatever its type: the one part of the operator that speaks
 * Kafka's Java Admin, because librdkafka (and so confluent-kafka) has no share- or
 * streams-group admin calls (Kafka 4.2+: listShareGroupOffsets, listStreamsGroupOffsets).
 *
 * A long-lived process: kafka_retention/adapters/group_reader.py starts one per operator
 * process (or Spark worker) and sends requests on stdin; it keeps one Admin per
 * connection, closed after IDLE_MS unused, and exits when stdin closes (its parent died).
 *
 * Lines are tab-separated fields, each percent-encoded (%, tab, CR and LF), so group ids
 * and property values (PEM text) pass whole. A request:
 *   config KEY VALUE      (repeated: the Java client's properties)
 *   chunk N               (partitions per offsets request)
 *   ask GROUP [TOPIC PARTITION]   (repeated; a group with no partition still gets its type)
 *   end
 * The answer:
 *   type GROUP consumer|classic|share|streams|none
 *   offset GROUP TOPIC PARTITION OFFSET|-     ("-": no position on that partition)
 *   error retriable|fatal MESSAGE              (instead of the above when the read failed)
 *   done
 * The position is the committed offset for consumer, classic and streams groups and the
 * share-partition start offset (SPSO) for share groups: records below it are done with.
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;

public final class GroupPositions {
    private static final long IDLE_MS = 300_000;

    private static final class Client {
        final Admin admin;
        final long timeoutMs;
        long lastUsed;

        Client(Properties props, long timeoutMs) {
            this.admin = Admin.create(props);
            this.timeoutMs = timeoutMs;
        }
    }

    private final Map<String, Client> clients = new HashMap<>();
    private final PrintStream out;

    private GroupPositions(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        GroupPositions reader = new GroupPositions(out);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        TreeMap<String, String> config = new TreeMap<>();
        Map<String, List<TopicPartition>> asked = new LinkedHashMap<>();
        int chunk = 2000;
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            for (int i = 0; i < f.length; i++) {
                f[i] = decode(f[i]);
            }
            switch (f[0]) {
                case "config" -> config.put(f[1], f[2]);
                case "chunk" -> chunk = Math.max(1, Integer.parseInt(f[1]));
                case "ask" -> {
                    List<TopicPartition> tps = asked.computeIfAbsent(f[1], g -> new ArrayList<>());
                    if (f.length > 3) {
                        tps.add(new TopicPartition(f[2], Integer.parseInt(f[3])));
                    }
                }
                case "end" -> {
                    reader.answer(config, asked, chunk);
                    config = new TreeMap<>();
                    asked = new LinkedHashMap<>();
                    chunk = 2000;
                }
                default -> {
                    out.println("error\tfatal\t" + encode("unknown request line: " + f[0]));
                    out.println("done");
                    out.flush();
                }
            }
        }
        reader.closeAll();
    }

    private void answer(TreeMap<String, String> config, Map<String, List<TopicPartition>> asked, int chunk) {
        List<String> lines = new ArrayList<>();
        Client client = null;
        try {
            client = client(config);
            read(client, asked, chunk, lines);
            for (String l : lines) {
                out.println(l);
            }
        } catch (Throwable t) {
            Throwable cause = t instanceof ExecutionException && t.getCause() != null ? t.getCause() : t;
            boolean retriable = cause instanceof RetriableException
                || cause instanceof java.util.concurrent.TimeoutException
                || cause instanceof org.apache.kafka.common.errors.TimeoutException;
            String message = cause.getClass().getSimpleName() + ": " + cause.getMessage();
            out.println("error\t" + (retriable ? "retriable" : "fatal") + "\t" + encode(message));
            if (client != null && !retriable) {
                // An Admin that failed for good (bad credentials, say) is not kept.
                dropClient(config);
            }
        }
        out.println("done");
        out.flush();
        closeIdle();
    }

    private void read(Client client, Map<String, List<TopicPartition>> asked, int chunk, List<String> lines)
            throws Exception {
        Map<String, GroupType> types = new HashMap<>();
        // valid(): a broker that does not answer leaves out the groups it coordinates (read
        // as "none", which protects) rather than failing every group.
        for (GroupListing listing : client.admin.listGroups(new ListGroupsOptions()).valid()
                .get(client.timeoutMs, TimeUnit.MILLISECONDS)) {
            if (asked.containsKey(listing.groupId())) {
                types.put(listing.groupId(), listing.type().orElse(GroupType.UNKNOWN));
            }
        }
        for (Map.Entry<String, List<TopicPartition>> e : asked.entrySet()) {
            String group = e.getKey();
            GroupType type = types.get(group);
            String name = type == null ? "none" : switch (type) {
                case CONSUMER -> "consumer";
                case CLASSIC -> "classic";
                case SHARE -> "share";
                case STREAMS -> "streams";
                default -> "none";
            };
            lines.add("type\t" + encode(group) + "\t" + name);
            List<TopicPartition> tps = e.getValue();
            for (int i = 0; i < tps.size(); i += chunk) {
                List<TopicPartition> part = tps.subList(i, Math.min(tps.size(), i + chunk));
                Map<TopicPartition, Long> found = positions(client, group, name, part);
                for (TopicPartition tp : part) {
                    Long at = found.get(tp);
                    lines.add("offset\t" + encode(group) + "\t" + encode(tp.topic()) + "\t" + tp.partition()
                        + "\t" + (at == null || at < 0 ? "-" : at.toString()));
                }
            }
        }
    }

    private static Map<TopicPartition, Long> positions(Client client, String group, String type,
            List<TopicPartition> tps) throws Exception {
        Map<TopicPartition, Long> out = new HashMap<>();
        long timeout = client.timeoutMs;
        switch (type) {
            case "share" -> {
                Map<TopicPartition, SharePartitionOffsetInfo> got = client.admin
                    .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec().topicPartitions(tps)))
                    .partitionsToOffsetInfo(group).get(timeout, TimeUnit.MILLISECONDS);
                got.forEach((tp, info) -> {
                    if (info != null) {
                        out.put(tp, info.startOffset());
                    }
                });
            }
            case "streams" -> out.putAll(commits(client.admin
                .listStreamsGroupOffsets(Map.of(group, new ListStreamsGroupOffsetsSpec().topicPartitions(tps)))
                .partitionsToOffsetAndMetadata(group).get(timeout, TimeUnit.MILLISECONDS)));
            case "consumer", "classic" -> out.putAll(commits(client.admin
                .listConsumerGroupOffsets(Map.of(group, new ListConsumerGroupOffsetsSpec().topicPartitions(tps)))
                .partitionsToOffsetAndMetadata(group).get(timeout, TimeUnit.MILLISECONDS)));
            default -> {
                // No group of that id: no position anywhere, as for a group that never committed.
            }
        }
        return out;
    }

    private static Map<TopicPartition, Long> commits(Map<TopicPartition, OffsetAndMetadata> got) {
        Map<TopicPartition, Long> out = new HashMap<>();
        got.forEach((tp, om) -> {
            if (om != null) {
                out.put(tp, om.offset());
            }
        });
        return out;
    }

    private Client client(TreeMap<String, String> config) {
        String key = config.toString();
        Client c = clients.get(key);
        if (c == null) {
            Properties props = new Properties();
            props.putAll(config);
            long timeout = Long.parseLong(config.getOrDefault("default.api.timeout.ms", "30000"));
            c = new Client(props, timeout);
            clients.put(key, c);
        }
        c.lastUsed = System.currentTimeMillis();
        return c;
    }

    private void dropClient(TreeMap<String, String> config) {
        Client c = clients.remove(config.toString());
        if (c != null) {
            c.admin.close(java.time.Duration.ofSeconds(1));
        }
    }

    private void closeIdle() {
        long now = System.currentTimeMillis();
        clients.entrySet().removeIf(e -> {
            if (now - e.getValue().lastUsed > IDLE_MS) {
                e.getValue().admin.close(java.time.Duration.ofSeconds(1));
                return true;
            }
            return false;
        });
    }

    private void closeAll() {
        for (Client c : clients.values()) {
            c.admin.close(java.time.Duration.ofSeconds(1));
        }
        clients.clear();
    }

    static String encode(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case '%' -> b.append("%25");
                case '\t' -> b.append("%09");
                case '\n' -> b.append("%0A");
                case '\r' -> b.append("%0D");
                default -> b.append(ch);
            }
        }
        return b.toString();
    }

    static String decode(String s) {
        if (s.indexOf('%') < 0) {
            return s;
        }
        StringBuilder b = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            if (ch == '%' && i + 2 < s.length()) {
                b.append((char) Integer.parseInt(s.substring(i + 1, i + 3), 16));
                i += 2;
            } else {
                b.append(ch);
            }
        }
        return b.toString();
    }
}
