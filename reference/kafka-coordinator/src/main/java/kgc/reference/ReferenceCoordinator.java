package kgc.reference;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Properties;
import java.util.Set;
import kafka.common.OffsetAndMetadata;
import kafka.coordinator.group.BaseKey;
import kafka.coordinator.group.GroupCoordinator;
import kafka.coordinator.group.GroupCoordinator$;
import kafka.coordinator.group.GroupMetadata;
import kafka.coordinator.group.GroupMetadataKey;
import kafka.coordinator.group.GroupMetadataManager;
import kafka.coordinator.group.GroupMetadataManager$;
import kafka.coordinator.group.JoinGroupResult;
import kafka.coordinator.group.LeaveGroupResult;
import kafka.coordinator.group.LeaveMemberResponse;
import kafka.coordinator.group.SyncGroupResult;
import kafka.server.DelayedOperationPurgatory;
import kafka.server.KafkaConfig;
import kafka.server.ReplicaManager;
import kafka.server.RequestLocal;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.message.LeaveGroupRequestData.MemberIdentity;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.requests.ProduceResponse.PartitionResponse;
import org.mockito.Mockito;
import scala.Function0;
import scala.Function1;
import scala.Option;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.BoxedUnit;

/**
 * Kafka 3.9.1's own classic GroupCoordinator (kafka.coordinator.group.GroupCoordinator, the Scala
 * code kgc models) driven in-process the way Kafka's GroupCoordinatorTest drives it: a Mockito
 * ReplicaManager whose appends to the offsets topic complete at once or wait for a `store` command,
 * Heartbeat and Rebalance purgatories on a virtual timer, and JSON lines on stdin/stdout so that a
 * Python client can replay kgc's scenarios and traces on Kafka's code (the oracle of issue 21).
 *
 * One command per input line; one JSON object per output line: {"ok":true,"events":[...],"now":ms}
 * where events are the responses whose callbacks ran during the command (a JoinGroup answered by
 * a later tick shows up in that tick's events), or {"ok":false,"error":"..."}.
 */
public final class ReferenceCoordinator {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String OFFSETS_TOPIC = "__consumer_offsets";
    private static final int OFFSETS_PARTITIONS = 50;

    /** One append to the offsets topic waiting for a `store` command (store mode "deferred"). */
    private record PendingWrite(
            TopicPartition partition, byte[] groupValue, Function1<Object, BoxedUnit> callback) {}

    private VirtualTimer timer;
    private GroupCoordinator coordinator;
    private GroupMetadataManager manager;
    private boolean deferred;
    private final Map<String, ArrayDeque<PendingWrite>> pendingWrites = new HashMap<>();
    /** group id -> last successfully written GroupMetadata value (null bytes = tombstone). */
    private final Map<String, byte[]> storedGroup = new HashMap<>();
    private final Set<String> everStored = new java.util.HashSet<>();
    private ArrayNode events = JSON.createArrayNode();

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        // Kafka logs through slf4j; without a binding it stays quiet. Keep stdout for the protocol.
        System.setOut(System.err);
        ReferenceCoordinator ref = new ReferenceCoordinator();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            ObjectNode reply;
            try {
                reply = ref.handle(JSON.readTree(line));
            } catch (Exception e) {
                reply = JSON.createObjectNode();
                reply.put("ok", false);
                reply.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            out.println(JSON.writeValueAsString(reply));
            if (reply.path("bye").asBoolean(false)) break;
        }
        ref.shutdown();
    }

    private ObjectNode handle(JsonNode cmd) throws Exception {
        String op = cmd.path("op").asText();
        events = JSON.createArrayNode();
        ObjectNode reply = JSON.createObjectNode();
        if (!op.equals("init") && !op.equals("quit") && coordinator == null)
            throw new IllegalStateException("send an init command first");
        switch (op) {
            case "init" -> init(cmd);
            case "join" -> request(cmd, () -> join(cmd));
            case "sync" -> request(cmd, () -> sync(cmd));
            case "heartbeat" -> request(cmd, () -> heartbeat(cmd));
            case "leave" -> request(cmd, () -> leave(cmd));
            case "commit" -> request(cmd, () -> commit(cmd));
            case "tick" -> timer.advanceClock(cmd.path("ms").asLong());
            case "advance" -> timer.advanceWithoutRunning(cmd.path("ms").asLong());
            case "expire" -> reply.put("expired", expire(cmd));
            case "store" -> store(cmd);
            case "unload" -> unload(cmd.path("group").asText());
            case "load_begin" -> manager.addLoadingPartition(manager.partitionFor(cmd.path("group").asText()));
            case "load" -> load(cmd.path("group").asText());
            case "state" -> reply.set("state", state(cmd.path("group").asText()));
            case "quit" -> reply.put("bye", true);
            default -> throw new IllegalArgumentException("unknown op " + op);
        }
        reply.put("ok", true);
        reply.set("events", events);
        reply.put("now", timer == null ? 0 : timer.time.milliseconds());
        return reply;
    }

    /**
     * A handler that throws is answered as KafkaApis answers it: the request's error is
     * Errors.forException of what was thrown (UNKNOWN_SERVER_ERROR for an IllegalStateException).
     */
    private void request(JsonNode cmd, Runnable handler) {
        try {
            handler.run();
        } catch (RuntimeException e) {
            ObjectNode ev = response(cmd, cmd.path("op").asText(), Errors.forException(e));
            ev.put("exception", e.getClass().getSimpleName() + ": " + e.getMessage());
            if (cmd.path("op").asText().equals("join")) {
                // JoinGroupRequest.getErrorResponse: no member id, UNKNOWN_GENERATION_ID (-1)
                ev.put("member_id", "");
                ev.put("generation", -1);
                ev.put("leader", "");
                ev.putNull("protocol");
                ev.put("skip_assignment", false);
                ev.putArray("members");
            }
        }
    }

    // ---- set-up, as GroupCoordinatorTest.setUp does it ----

    private void init(JsonNode cmd) {
        shutdown();
        Properties props = new Properties();
        props.setProperty("broker.id", "0");
        props.setProperty("zookeeper.connect", "localhost:2181");
        props.setProperty("group.min.session.timeout.ms", cmd.path("min_session_timeout_ms").asText("6000"));
        props.setProperty("group.max.session.timeout.ms", cmd.path("max_session_timeout_ms").asText("1800000"));
        props.setProperty("group.initial.rebalance.delay.ms", cmd.path("initial_rebalance_delay_ms").asText("0"));
        JsonNode maxSize = cmd.path("max_group_size");
        props.setProperty("group.max.size", maxSize.isNull() || maxSize.isMissingNode()
                ? String.valueOf(Integer.MAX_VALUE) : maxSize.asText());
        props.setProperty("offsets.topic.num.partitions", String.valueOf(OFFSETS_PARTITIONS));
        KafkaConfig config = KafkaConfig.fromProps(props);
        deferred = "deferred".equals(cmd.path("store").asText("immediate"));
        pendingWrites.clear();
        storedGroup.clear();
        everStored.clear();

        timer = new VirtualTimer();
        ReplicaManager replicaManager = Mockito.mock(ReplicaManager.class);
        Mockito.when(replicaManager.getMagic(Mockito.any()))
                .thenReturn(Option.apply((Object) RecordBatch.CURRENT_MAGIC_VALUE));
        Mockito.doAnswer(inv -> {
                    onAppend(inv.getArgument(4), inv.getArgument(5));
                    return null;
                })
                .when(replicaManager)
                .appendRecords(Mockito.anyLong(), Mockito.anyShort(), Mockito.anyBoolean(), Mockito.any(),
                        Mockito.any(), Mockito.any(), Mockito.any(), Mockito.any(), Mockito.any(),
                        Mockito.any(), Mockito.any());
        DelayedOperationPurgatory<kafka.coordinator.group.DelayedHeartbeat> heartbeats =
                new DelayedOperationPurgatory<>("Heartbeat", timer, 0, 1000, false, true);
        DelayedOperationPurgatory<kafka.coordinator.group.DelayedRebalance> rebalances =
                new DelayedOperationPurgatory<>("Rebalance", timer, 0, 1000, false, true);
        coordinator = GroupCoordinator$.MODULE$.apply(config, replicaManager, heartbeats, rebalances,
                timer.time, new Metrics());
        coordinator.startup((Function0<Object>) () -> OFFSETS_PARTITIONS, false);
        manager = coordinator.groupManager();
        for (int p = 0; p < OFFSETS_PARTITIONS; p++) manager.addOwnedPartition(p);
    }

    private void shutdown() {
        if (coordinator != null) coordinator.shutdown();
        coordinator = null;
    }

    // ---- the stubbed replica manager: appends to the offsets topic ----

    @SuppressWarnings("unchecked")
    private void onAppend(scala.collection.Map<TopicPartition, MemoryRecords> entries,
            Function1<scala.collection.Map<TopicPartition, PartitionResponse>, BoxedUnit> callback) {
        Map<TopicPartition, MemoryRecords> records = CollectionConverters.asJava(entries);
        TopicPartition tp = records.keySet().iterator().next();
        String group = null;
        byte[] groupValue = null;
        boolean isGroupWrite = false;
        for (Record r : records.get(tp).records()) {
            BaseKey key = GroupMetadataManager$.MODULE$.readMessageKey(r.key());
            if (key instanceof GroupMetadataKey gk) {
                isGroupWrite = true;
                group = gk.key();
                if (r.hasValue()) {
                    groupValue = new byte[r.valueSize()];
                    r.value().get(groupValue);
                }
            } else if (group == null) {
                group = ((kafka.coordinator.group.OffsetKey) key).key().group();
            }
        }
        Function1<Object, BoxedUnit> complete = err -> callback.apply(
                scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(
                        Map.of(tp, new PartitionResponse((Errors) err)))));
        PendingWrite write = new PendingWrite(tp, groupValue, complete);
        if (isGroupWrite && deferred) {
            pendingWrites.computeIfAbsent(group, g -> new ArrayDeque<>()).add(write);
            return;
        }
        if (isGroupWrite) remember(group, write);
        complete.apply(Errors.NONE);
    }

    private void remember(String group, PendingWrite write) {
        storedGroup.put(group, write.groupValue);
        everStored.add(group);
    }

    private void store(JsonNode cmd) {
        String group = cmd.path("group").asText();
        ArrayDeque<PendingWrite> queue = pendingWrites.get(group);
        if (queue == null || queue.isEmpty())
            throw new IllegalStateException("no unfinished group-metadata write for " + group);
        PendingWrite write = queue.poll();
        Errors error = Errors.valueOf(cmd.path("error").asText("NONE"));
        if (error == Errors.NONE) remember(group, write);
        write.callback.apply(error);
    }

    // ---- unload / load (GroupCoordinator.onResignation / onElection, run synchronously) ----

    private TopicPartition partitionOf(String group) {
        return new TopicPartition(OFFSETS_TOPIC, manager.partitionFor(group));
    }

    private void unload(String group) throws Exception {
        Method onGroupUnloaded = privateMethod(GroupCoordinator.class, "onGroupUnloaded");
        manager.removeGroupsAndOffsets(partitionOf(group), OptionalInt.empty(), g -> {
            invoke(onGroupUnloaded, g);
            return BoxedUnit.UNIT;
        });
        // writes in flight stay in flight: the scenario's `store` steps complete them later
    }

    /**
     * GroupMetadataManager.doLoadGroupsAndOffsets reads the offsets partition; here the last group
     * record that was written successfully is decoded by Kafka's own readGroupMessageValue and handed
     * to addGroup and GroupCoordinator.onGroupLoaded, the two steps loadGroup ends with.
     */
    private void load(String group) throws Exception {
        TopicPartition tp = partitionOf(group);
        byte[] value = storedGroup.get(group);
        if (value != null) {
            GroupMetadata loaded = GroupMetadataManager$.MODULE$.readGroupMessageValue(
                    group, java.nio.ByteBuffer.wrap(value), timer.time);
            GroupMetadata current = manager.addGroup(loaded);
            invoke(privateMethod(GroupCoordinator.class, "onGroupLoaded"), current);
        }
        Field loading = privateField(GroupMetadataManager.class, "loadingPartitions");
        ((scala.collection.mutable.Set<Object>) loading.get(manager)).remove(tp.partition());
        manager.addOwnedPartition(tp.partition());
    }

    private Method privateMethod(Class<?> cls, String suffix) {
        for (Method m : cls.getDeclaredMethods()) {
            if (m.getName().endsWith(suffix) && m.getParameterCount() == 1) {
                m.setAccessible(true);
                return m;
            }
        }
        throw new IllegalStateException("no method " + suffix + " in " + cls.getName());
    }

    private Field privateField(Class<?> cls, String suffix) {
        for (Field f : cls.getDeclaredFields()) {
            if (f.getName().endsWith(suffix)) {
                f.setAccessible(true);
                return f;
            }
        }
        throw new IllegalStateException("no field " + suffix + " in " + cls.getName());
    }

    private void invoke(Method m, GroupMetadata g) {
        try {
            m.invoke(coordinator, g);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    // ---- requests ----

    private static Option<String> opt(JsonNode node, String key) {
        JsonNode v = node.path(key);
        return v.isMissingNode() || v.isNull() ? Option.empty() : Option.apply(v.asText());
    }

    private ObjectNode response(JsonNode cmd, String kind, Errors error) {
        ObjectNode ev = events.addObject();
        ev.put("id", cmd.path("id").asText());
        ev.put("kind", kind);
        ev.put("error", error.name());
        return ev;
    }

    private void join(JsonNode cmd) {
        List<Tuple2<String, byte[]>> protocols = new ArrayList<>();
        for (JsonNode p : cmd.path("protocols")) {
            protocols.add(new Tuple2<>(p.get(0).asText(), p.get(1).asText().getBytes(StandardCharsets.UTF_8)));
        }
        int session = cmd.path("session_timeout_ms").asInt();
        coordinator.handleJoinGroup(
                cmd.path("group").asText(), cmd.path("member").asText(), opt(cmd, "instance"),
                cmd.path("require_known_member").asBoolean(), cmd.path("support_skip_assignment").asBoolean(),
                cmd.path("client").asText("client"), "/127.0.0.1",
                cmd.path("rebalance_timeout_ms").asInt(session), session, cmd.path("protocol_type").asText(),
                CollectionConverters.asScala(protocols).toList(),
                (JoinGroupResult r) -> {
                    ObjectNode ev = response(cmd, "join", r.error());
                    ev.put("member_id", r.memberId());
                    ev.put("generation", r.generationId());
                    ev.put("leader", r.leaderId());
                    ev.put("protocol", r.protocolName().isDefined() ? r.protocolName().get() : null);
                    ev.put("protocol_type", r.protocolType().isDefined() ? r.protocolType().get() : null);
                    ev.put("skip_assignment", r.skipAssignment());
                    ArrayNode members = ev.putArray("members");
                    for (JoinGroupResponseData.JoinGroupResponseMember m : CollectionConverters.asJava(r.members()))
                        members.add(m.memberId());
                    return BoxedUnit.UNIT;
                },
                Option.empty(), kafka.server.RequestLocal$.MODULE$.NoCaching());
    }

    private void sync(JsonNode cmd) {
        Map<String, byte[]> assignment = new LinkedHashMap<>();
        cmd.path("assignment").fields().forEachRemaining(
                e -> assignment.put(e.getKey(), e.getValue().asText().getBytes(StandardCharsets.UTF_8)));
        coordinator.handleSyncGroup(
                cmd.path("group").asText(), cmd.path("generation").asInt(), cmd.path("member").asText(),
                opt(cmd, "protocol_type"), opt(cmd, "protocol"), opt(cmd, "instance"),
                CollectionConverters.asScala(assignment),
                (SyncGroupResult r) -> {
                    ObjectNode ev = response(cmd, "sync", r.error());
                    ev.put("assignment", new String(r.memberAssignment(), StandardCharsets.UTF_8));
                    ev.put("protocol_type", r.protocolType().isDefined() ? r.protocolType().get() : null);
                    ev.put("protocol", r.protocolName().isDefined() ? r.protocolName().get() : null);
                    return BoxedUnit.UNIT;
                },
                kafka.server.RequestLocal$.MODULE$.NoCaching());
    }

    private void heartbeat(JsonNode cmd) {
        coordinator.handleHeartbeat(cmd.path("group").asText(), cmd.path("member").asText(),
                opt(cmd, "instance"), cmd.path("generation").asInt(),
                (Errors e) -> {
                    response(cmd, "heartbeat", e);
                    return BoxedUnit.UNIT;
                });
    }

    private void leave(JsonNode cmd) {
        MemberIdentity who = new MemberIdentity().setMemberId(cmd.path("member").asText());
        Option<String> instance = opt(cmd, "instance");
        if (instance.isDefined()) who.setGroupInstanceId(instance.get());
        coordinator.handleLeaveGroup(cmd.path("group").asText(),
                CollectionConverters.asScala(List.of(who)).toList(),
                (LeaveGroupResult r) -> {
                    Errors error = r.topLevelError();
                    if (error == Errors.NONE && !r.memberResponses().isEmpty())
                        error = ((LeaveMemberResponse) r.memberResponses().head()).error();
                    ObjectNode ev = response(cmd, "leave", error);
                    ev.put("top_level_error", r.topLevelError().name());
                    return BoxedUnit.UNIT;
                });
    }

    private void commit(JsonNode cmd) {
        Map<TopicIdPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
        cmd.path("offsets").fields().forEachRemaining(e -> {
            String name = e.getKey();
            int dash = name.lastIndexOf('-');
            TopicPartition tp = new TopicPartition(name.substring(0, dash), Integer.parseInt(name.substring(dash + 1)));
            offsets.put(new TopicIdPartition(Uuid.ZERO_UUID, tp), new OffsetAndMetadata(
                    e.getValue().asLong(), Optional.empty(), "", timer.time.milliseconds(), Option.empty()));
        });
        coordinator.handleCommitOffsets(cmd.path("group").asText(), cmd.path("member").asText(),
                opt(cmd, "instance"), cmd.path("generation").asInt(),
                scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(offsets)),
                (scala.collection.immutable.Map<TopicIdPartition, Errors> result) -> {
                    Errors error = Errors.NONE;
                    for (Errors e : CollectionConverters.asJava(result).values()) if (e != Errors.NONE) error = e;
                    response(cmd, "commit", error);
                    return BoxedUnit.UNIT;
                },
                kafka.server.RequestLocal$.MODULE$.NoCaching());
    }

    // ---- one named expiry (kgc's programs: a request may come between two timers of one instant) ----

    /**
     * Runs the expiry of the hosted group's delayed operation named by Kafka's purgatory key
     * (DelayedJoin / DelayedSync: GroupJoinKey / GroupSyncKey of the group; DelayedHeartbeat:
     * MemberKey of group and member) whose deadline is now; false when none is. An operation
     * held for an unloaded GroupMetadata object is not the hosted group's.
     */
    private boolean expire(JsonNode cmd) throws Exception {
        String operation = cmd.path("operation").asText();
        Option<GroupMetadata> hosted = manager.getGroup(cmd.path("group").asText());
        if (hosted.isEmpty()) return false;
        GroupMetadata group = hosted.get();
        Class<?> type = switch (operation) {
            case "DelayedJoin" -> kafka.coordinator.group.DelayedJoin.class;
            case "DelayedSync" -> kafka.coordinator.group.DelayedSync.class;
            case "DelayedHeartbeat" -> kafka.coordinator.group.DelayedHeartbeat.class;
            default -> throw new IllegalArgumentException("unknown delayed operation " + operation);
        };
        Field groupField = type.getDeclaredField("group");
        groupField.setAccessible(true);
        Field memberField = null;
        if (type == kafka.coordinator.group.DelayedHeartbeat.class) {
            memberField = type.getDeclaredField("memberId");
            memberField.setAccessible(true);
        }
        String member = cmd.path("member").isTextual() ? cmd.path("member").asText() : null;
        // "unanswered": the member ids JoinGroup responses gave so far; the operation is then
        // the first due DelayedHeartbeat of a member none of them names (its join is parked)
        JsonNode answered = cmd.path("unanswered");
        Set<String> given = new java.util.HashSet<>();
        answered.forEach(id -> given.add(id.asText()));
        Field memberOf = memberField;
        return timer.expireDue(task -> {
            if (!type.isInstance(task)) return false;
            try {
                if (groupField.get(task) != group) return false;
                if (memberOf == null) return true;
                String id = (String) memberOf.get(task);
                return answered.isArray() ? !given.contains(id) : id.equals(member);
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    // ---- the group's state, as expect_state reads it ----

    private ObjectNode state(String groupId) {
        ObjectNode s = JSON.createObjectNode();
        Option<GroupMetadata> found = manager.getGroup(groupId);
        ArrayDeque<PendingWrite> queue = pendingWrites.get(groupId);
        s.put("unfinished_writes", queue == null ? 0 : queue.size());
        byte[] stored = storedGroup.get(groupId);
        if (stored != null) {
            s.put("stored_generation", GroupMetadataManager$.MODULE$.readGroupMessageValue(
                    groupId, java.nio.ByteBuffer.wrap(stored), timer.time).generationId());
        } else {
            s.putNull("stored_generation");
        }
        s.put("loading", manager.isGroupLoading(groupId));
        if (found.isEmpty()) {
            s.put("state", "Dead");
            return s;
        }
        GroupMetadata g = found.get();
        synchronized (g.lock()) {
            s.put("state", g.currentState().toString());
            s.put("generation", g.generationId());
            s.put("leader", g.leaderOrNull());
            s.put("protocol", g.protocolName().isDefined() ? g.protocolName().get() : null);
            ArrayNode members = s.putArray("members");
            for (String m : CollectionConverters.asJava(g.allMembers())) members.add(m);
            s.put("member_count", g.size());
            s.put("pending_count", g.numPending());
            ObjectNode statics = s.putObject("static_members");
            for (kafka.coordinator.group.MemberMetadata m : CollectionConverters.asJava(g.allMemberMetadata())) {
                if (m.groupInstanceId().isDefined()) statics.put(m.groupInstanceId().get(), m.memberId());
            }
        }
        return s;
    }
}
