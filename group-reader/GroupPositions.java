/*
 * Where each named group is, whatever its type: the one part of the operator that speaks
 * Kafka's Java Admin, because librdkafka (and so confluent-kafka) has no share- or
 * streams-group admin calls (Kafka 4.2+: listShareGroupOffsets, listStreamsGroupOffsets).
 *
 * A long-lived process: kafka_retention/adapters/group_reader.py starts one per operator
 * process (or Spark worker) and sends requests on stdin; it keeps one Admin per
 * connection, closed after IDLE_MS unused, and exits when stdin closes (its parent died).
 * Requests are answered concurrently (THREADS at a time), each answer written whole and
 * tagged with its request's id, so a cluster that does not answer delays only its own
 * reads, never another tenant's.
 *
 * Lines are tab-separated fields, each percent-encoded (%, tab, CR and LF), so group ids
 * and property values (PEM text) pass whole. A request:
 *   config KEY VALUE      (repeated: the Java client's properties)
 *   chunk N               (partitions per offsets request)
 *   ask GROUP [TOPIC PARTITION]   (repeated; a group with no partition still gets its type)
 *   tier TOPIC PARTITION  (repeated: where a tiered partition's data is, KIP-405)
 *   size TOPIC            (repeated: the topic's local bytes on every broker's log dirs)
 *   features              (what the cluster runs: DescribeFeatures)
 *   end ID
 * The answer:
 *   answer ID
 *   type GROUP consumer|classic|share|streams|none
 *   offset GROUP TOPIC PARTITION OFFSET|-     ("-": no position on that partition)
 *   tier TOPIC PARTITION LOCAL TIERED PENDING (ListOffsets -4, -5, -6: earliest local,
 *                                              latest tiered, earliest pending upload;
 *                                              "-" where the broker has no such offset)
 *   bytes BROKER TOPIC PARTITION BYTES         (DescribeLogDirs, summed over the broker's dirs;
 *                                              remote bytes are never in it)
 *   finalized FEATURE LEVEL                    (each finalized feature: metadata.version,
 *                                              group.version, share.version, ...)
 *   supported FEATURE MAXLEVEL                 (the answering broker's highest level of each)
 *   error retriable|fatal MESSAGE              (instead of the above when the read failed)
 *   done ID
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
import java.util.Set;
import java.util.TreeSet;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.SupportedVersionRange;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;

public final class GroupPositions {
    private static final long IDLE_MS = 300_000;
    private static final int THREADS = 8;

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
        ExecutorService pool = Executors.newFixedThreadPool(THREADS, r -> {
            Thread t = new Thread(r, "group-reader");
            t.setDaemon(true);
            return t;
        });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        TreeMap<String, String> config = new TreeMap<>();
        Map<String, List<TopicPartition>> asked = new LinkedHashMap<>();
        Request extra = new Request();
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
                case "tier" -> extra.tiers.add(new TopicPartition(f[1], Integer.parseInt(f[2])));
                case "size" -> extra.sizes.add(f[1]);
                case "features" -> extra.features = true;
                case "end" -> {
                    String id = f.length > 1 ? f[1] : "0";
                    TreeMap<String, String> c = config;
                    Map<String, List<TopicPartition>> a = asked;
                    Request x = extra;
                    int n = chunk;
                    pool.submit(() -> reader.answer(id, c, a, x, n));
                    config = new TreeMap<>();
                    asked = new LinkedHashMap<>();
                    extra = new Request();
                    chunk = 2000;
                }
                default -> reader.write("answer\t0\nerror\tfatal\t"
                    + encode("unknown request line: " + f[0]) + "\ndone\t0\n");
            }
        }
        // stdin closed: the process that asked is gone, and nobody reads the answers.
        pool.shutdownNow();
        reader.closeAll();
        System.exit(0);
    }

    private void write(String text) {
        synchronized (out) {
            out.print(text);
            out.flush();
        }
    }

    /** What a request asks besides groups: tiered partitions' offsets, topics' local bytes. */
    private static final class Request {
        final List<TopicPartition> tiers = new ArrayList<>();
        final Set<String> sizes = new TreeSet<>();
        boolean features;
    }

    private void answer(String id, TreeMap<String, String> config, Map<String, List<TopicPartition>> asked,
            Request extra, int chunk) {
        List<String> lines = new ArrayList<>();
        StringBuilder text = new StringBuilder("answer\t").append(encode(id)).append('\n');
        Client client = null;
        try {
            client = client(config);
            if (!asked.isEmpty()) {
                read(client, asked, chunk, lines);
            }
            tiers(client, extra.tiers, chunk, lines);
            sizes(client, extra.sizes, lines);
            if (extra.features) {
                features(client, lines);
            }
            for (String l : lines) {
                text.append(l).append('\n');
            }
        } catch (Throwable t) {
            Throwable cause = t instanceof ExecutionException && t.getCause() != null ? t.getCause() : t;
            boolean retriable = cause instanceof RetriableException
                || cause instanceof java.util.concurrent.TimeoutException
                || cause instanceof org.apache.kafka.common.errors.TimeoutException;
            String message = cause.getClass().getSimpleName() + ": " + (cause.getMessage() != null
                ? cause.getMessage()
                : "no answer within " + config.getOrDefault("default.api.timeout.ms", "30000") + " ms");
            text.append("error\t").append(retriable ? "retriable" : "fatal").append('\t')
                .append(encode(message)).append('\n');
            if (client != null && !retriable) {
                // An Admin that failed for good (bad credentials, say) is not kept.
                dropClient(config);
            }
        }
        text.append("done\t").append(encode(id)).append('\n');
        write(text.toString());
        closeIdle();
    }

    /**
     * What the cluster runs (DescribeFeatures): each finalized feature's level, the
     * metadata.version among them (which tells the Kafka release the cluster is on), and
     * the highest level the answering broker supports of each feature (a release that
     * knows share groups but has them off finalizes share.version 0, or not at all).
     */
    private void features(Client client, List<String> lines) throws Exception {
        FeatureMetadata metadata = client.admin.describeFeatures().featureMetadata()
            .get(client.timeoutMs, TimeUnit.MILLISECONDS);
        for (Map.Entry<String, FinalizedVersionRange> e : new TreeMap<>(metadata.finalizedFeatures()).entrySet()) {
            lines.add("finalized\t" + encode(e.getKey()) + "\t" + e.getValue().maxVersionLevel());
        }
        for (Map.Entry<String, SupportedVersionRange> e : new TreeMap<>(metadata.supportedFeatures()).entrySet()) {
            lines.add("supported\t" + encode(e.getKey()) + "\t" + e.getValue().maxVersion());
        }
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

    private static void tiers(Client client, List<TopicPartition> tps, int chunk, List<String> lines)
            throws Exception {
        for (int i = 0; i < tps.size(); i += chunk) {
            List<TopicPartition> part = tps.subList(i, Math.min(tps.size(), i + chunk));
            Map<TopicPartition, Long> local = offsets(client, part, OffsetSpec.earliestLocal());
            Map<TopicPartition, Long> tiered = offsets(client, part, OffsetSpec.latestTiered());
            Map<TopicPartition, Long> pending = offsets(client, part, OffsetSpec.earliestPendingUpload());
            for (TopicPartition tp : part) {
                lines.add("tier\t" + encode(tp.topic()) + "\t" + tp.partition() + "\t" + number(local.get(tp))
                    + "\t" + number(tiered.get(tp)) + "\t" + number(pending.get(tp)));
            }
        }
    }

    /** Each partition's offset for `spec`; a partition the broker gives none (-1), or a
     * broker too old for the spec (UnsupportedVersionException), is left out. */
    private static Map<TopicPartition, Long> offsets(Client client, List<TopicPartition> tps, OffsetSpec spec)
            throws Exception {
        Map<TopicPartition, OffsetSpec> asked = new LinkedHashMap<>();
        for (TopicPartition tp : tps) {
            asked.put(tp, spec);
        }
        Map<TopicPartition, Long> out = new HashMap<>();
        ListOffsetsResult result = client.admin.listOffsets(asked);
        for (TopicPartition tp : tps) {
            try {
                long at = result.partitionResult(tp).get(client.timeoutMs, TimeUnit.MILLISECONDS).offset();
                if (at >= 0) {
                    out.put(tp, at);
                }
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof org.apache.kafka.common.errors.UnsupportedVersionException)) {
                    throw e;
                }
            }
        }
        return out;
    }

    private static String number(Long value) {
        return value == null ? "-" : value.toString();
    }

    private static void sizes(Client client, Set<String> topics, List<String> lines) throws Exception {
        if (topics.isEmpty()) {
            return;
        }
        List<Integer> brokers = new ArrayList<>();
        client.admin.describeCluster().nodes().get(client.timeoutMs, TimeUnit.MILLISECONDS)
            .forEach(n -> brokers.add(n.id()));
        Map<Integer, Map<String, LogDirDescription>> dirs = client.admin.describeLogDirs(brokers)
            .allDescriptions().get(client.timeoutMs, TimeUnit.MILLISECONDS);
        for (Map.Entry<Integer, Map<String, LogDirDescription>> broker : new TreeMap<>(dirs).entrySet()) {
            Map<TopicPartition, Long> bytes = new TreeMap<>(
                java.util.Comparator.comparing(TopicPartition::topic).thenComparing(TopicPartition::partition));
            for (LogDirDescription dir : broker.getValue().values()) {
                for (Map.Entry<TopicPartition, ReplicaInfo> r : dir.replicaInfos().entrySet()) {
                    if (topics.contains(r.getKey().topic()) && !r.getValue().isFuture()) {
                        bytes.merge(r.getKey(), r.getValue().size(), Long::sum);
                    }
                }
            }
            bytes.forEach((tp, n) -> lines.add("bytes\t" + broker.getKey() + "\t" + encode(tp.topic()) + "\t"
                + tp.partition() + "\t" + n));
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

    private synchronized Client client(TreeMap<String, String> config) {
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

    private synchronized void dropClient(TreeMap<String, String> config) {
        Client c = clients.remove(config.toString());
        if (c != null) {
            c.admin.close(java.time.Duration.ofSeconds(1));
        }
    }

    private synchronized void closeIdle() {
        long now = System.currentTimeMillis();
        clients.entrySet().removeIf(e -> {
            if (now - e.getValue().lastUsed > IDLE_MS) {
                e.getValue().admin.close(java.time.Duration.ofSeconds(1));
                return true;
            }
            return false;
        });
    }

    private synchronized void closeAll() {
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
