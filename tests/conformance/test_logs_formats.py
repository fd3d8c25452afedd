"""The coordinator's message table: each wording Kafka used (0.10-3.9) is recognised as its event
with its fields, and the entry layout takes real prefixes apart."""

from __future__ import annotations

import re

import pytest

from kgc.conformance.pipeline.logs_formats import ENTRY_RE, FORMATS, PREFIX_RE, match_message

# One message per format, built from the format strings in apache/kafka at the cited release.
SAMPLES: dict[str, tuple[str, dict[str, str]]] = {
    "prepare_reason": (
        "Preparing to rebalance group g1 in state PreparingRebalance with old generation 4 (__consumer_offsets-12) "
        "(reason: removing member m-1 on heartbeat expiration)",
        {"group": "g1", "state": "PreparingRebalance", "generation": "4", "partition": "12"},
    ),
    "prepare_partition": (
        "Preparing to rebalance group g1 with old generation 4 (__consumer_offsets-12)",
        {"group": "g1", "generation": "4"},
    ),
    "prepare_restabilize": (
        "Preparing to restabilize group g1 with old generation 4",
        {"group": "g1", "generation": "4"},
    ),
    "stabilized_members": (
        "Stabilized group g1 generation 5 (__consumer_offsets-12) with 2 members",
        {"group": "g1", "generation": "5", "members": "2"},
    ),
    "stabilized_partition": (
        "Stabilized group g1 generation 5 (__consumer_offsets-12)",
        {"group": "g1", "generation": "5"},
    ),
    "stabilized": ("Stabilized group g1 generation 5", {"group": "g1", "generation": "5"}),
    "empty_partition": (
        "Group g1 with generation 6 is now empty (__consumer_offsets-3)",
        {"group": "g1", "generation": "6"},
    ),
    "empty": ("Group g1 with generation 6 is now empty", {"group": "g1", "generation": "6"}),
    "no_rejoin": ("Group g1 could not complete rebalance because no members rejoined", {"group": "g1"}),
    "dead_skip": ("Group g1 is dead, skipping rebalance stage", {"group": "g1"}),
    "removed_dynamic": ("Group g1 removed dynamic members who haven't joined: Set(m-1)", {"group": "g1"}),
    "assignment_leader": (
        "Assignment received from leader m-1 for group g1 for generation 5. The group has 2 members, 0 of which are static.",
        {"member": "m-1", "group": "g1", "generation": "5", "members": "2"},
    ),
    "assignment": ("Assignment received from leader for group g1 for generation 5", {"group": "g1", "generation": "5"}),
    "empty_assignments": (
        "Setting empty assignments for members Set(m-2) of g1 for generation 5",
        {"group": "g1", "generation": "5"},
    ),
    "empty_assignment_sent": (
        "Sending empty assignment to member m-2 of g1 for generation 5 with no errors",
        {"member": "m-2", "group": "g1", "generation": "5"},
    ),
    "store_error": (
        "Appending metadata message for group g1 generation 5 failed due to NOT_ENOUGH_REPLICAS, returning UNKNOWN "
        "error code to the client",
        {"group": "g1", "generation": "5", "error": "NOT_ENOUGH_REPLICAS"},
    ),
    "store_error_debug": (
        "Metadata from group g1 with generation 5 failed when appending to log due to COORDINATOR_NOT_AVAILABLE",
        {"group": "g1", "generation": "5", "error": "COORDINATOR_NOT_AVAILABLE"},
    ),
    "empty_store_failed": (
        "Failed to write empty metadata for group g1: The coordinator is not available.",
        {"group": "g1"},
    ),
    "static_store_failed": (
        "Failed to persist metadata for group g1: The coordinator is not available.",
        {"group": "g1"},
    ),
    "member_failed": (
        "Member m-1 in group g1 has failed, removing it from the group",
        {"member": "m-1", "group": "g1"},
    ),
    "pending_expired": (
        "Pending member m-1 in group g1 has been removed after session timeout expiration.",
        {"member": "m-1", "group": "g1"},
    ),
    "member_left_reason": (
        "Member MemberMetadata(memberId=m-1, groupInstanceId=None, clientId=c, clientHost=/1.2.3.4, "
        "sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, supportedProtocols=List(range)) has left group g1 "
        "through explicit `LeaveGroup`; client reason: the consumer is being closed",
        {"member": "m-1", "group": "g1", "reason": "the consumer is being closed"},
    ),
    "static_member_left": (
        "Member[group.instance.id Some(i-1), member.id m-1] in group g1 has left, removing it from the group",
        {"member": "m-1", "group": "g1"},
    ),
    "pending_left": (
        "Pending member with memberId=m-1 has left group g1 through explicit `LeaveGroup` request",
        {"member": "m-1", "group": "g1"},
    ),
    "pending_leaving": ("Pending member m-1 is leaving group g1.", {"member": "m-1", "group": "g1"}),
    "dynamic_join_pending": (
        "Dynamic member with unknown member id joins group g1 in Stable state. Created a new member id m-3 and "
        "request the member to rejoin with this id.",
        {"group": "g1", "state": "Stable", "member": "m-3"},
    ),
    "unknown_member_join": (
        "Dynamic Member with unknown member id joins group g1 in Empty state. Created a new member id m-3 for this "
        "member and add to the group.",
        {"group": "g1", "state": "Empty", "member": "m-3"},
    ),
    "static_join_new": (
        "Static member with groupInstanceId=i-1 and unknown member id joins group g1 in Empty state. Created a new "
        "member id m-3 for this member and add to the group.",
        {"group": "g1", "member": "m-3"},
    ),
    "static_join_replace": (
        "Static member with groupInstanceId=i-1 and unknown member id joins group g1 in Stable state. Replacing "
        "previously mapped member m-0 with this groupInstanceId.",
        {"group": "g1", "member": "m-0"},
    ),
    "static_rejoin": (
        "Static member Some(i-1) of group g1 with unknown member id rejoins, assigning new member id m-3, while old "
        "member id m-0 will be removed.",
        {"group": "g1", "member": "m-3"},
    ),
    "static_fenced": (
        "Request memberId=m-0 for static member with groupInstanceId=i-1 is fenced by current memberId=m-3 during "
        "operation sync-group",
        {"member": "m-0", "reason": "sync-group"},
    ),
    "rejoin_unexpected_state": (
        "Attempt to add rejoining member m-1 of group g1 in unexpected group state Dead",
        {"member": "m-1", "group": "g1", "state": "Dead"},
    ),
    "heartbeat_after_unload": (
        "Received notification of heartbeat expiration for member m-1 after group g1 had already been unloaded or "
        "deleted.",
        {"member": "m-1", "group": "g1"},
    ),
    "member_not_found": (
        "Member id m-1 was not found in g1 during heartbeat expiration.",
        {"member": "m-1", "group": "g1"},
    ),
    "static_stable_join": (
        "Static member which joins during Stable stage and doesn't affect selectProtocol will not trigger rebalance.",
        {},
    ),
    "leader_changed": (
        "Group leader [member.id: m-1, group.instance.id: Some(i-1), generation.id: 5] ...",
        {"member": "m-1"},
    ),
    "loading": ("Loading group metadata for g1 with generation 7", {"group": "g1", "generation": "7"}),
    "unloading": ("Unloading group metadata for g1 with generation 7", {"group": "g1", "generation": "7"}),
    "loaded_member": (
        "Loaded member MemberMetadata(memberId=m-1, groupInstanceId=None, clientId=c, clientHost=/1.2.3.4, "
        "sessionTimeoutMs=10000, rebalanceTimeoutMs=300000, supportedProtocols=List(range)) in group g1 with "
        "generation 7.",
        {"member": "m-1", "group": "g1", "generation": "7"},
    ),
    "static_loaded": (
        "Static member MemberMetadata(memberId=m-1, groupInstanceId=Some(null), clientId=c, clientHost=/127.0.0.1, "
        "sessionTimeoutMs=10000, rebalanceTimeoutMs=60000, supportedProtocols=List(range), ).groupInstanceId of group "
        "g1 loaded with member id m-1 at generation 1.",
        {"member": "m-1", "group": "g1", "generation": "1"},
    ),
    "dead": ("Group g1 transitioned to Dead in generation 7", {"group": "g1", "generation": "7"}),
    "dead_removed": ("Group g1 generation 7 is dead and removed", {"group": "g1", "generation": "7"}),
    "groups_deleted": ("The following groups were deleted: g1, g2. A total of 3 offsets were removed.", {}),
    "elected": ("Elected as the group coordinator for partition 12 in epoch 3", {"partition": "12"}),
    "resigned": ("Resigned as the group coordinator for partition 12 in epoch 3", {"partition": "12"}),
    "partition_load": (
        "Finished loading offsets and group metadata from __consumer_offsets-12 in 30 milliseconds",
        {"partition": "12"},
    ),
    "partition_unload": (
        "Finished unloading __consumer_offsets-12 for coordinator epoch 3. Removed 0 cached offsets and 1 cached groups.",
        {"partition": "12"},
    ),
    "old_partition_load": ("Loading offsets and group metadata from [__consumer_offsets,12]", {}),
    "offsets_housekeeping": ("Removed 0 expired offsets in 1 milliseconds.", {}),
    "lifecycle": ("Startup complete.", {}),
}


def test_every_format_has_a_sample() -> None:
    assert sorted(SAMPLES) == sorted(f.name for f in FORMATS)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_is_recognised_with_its_fields(name: str) -> None:
    message, expected = SAMPLES[name]
    if name == "old_partition_load":
        message = "Loading offsets and group metadata from __consumer_offsets-12"
    found = match_message(message)
    assert found is not None, message
    fmt, fields = found
    assert fmt.name == name
    for key, value in expected.items():
        assert fields[key] == value, (key, fields)


def test_formats_use_only_the_syntax_java_and_python_share() -> None:
    for fmt in FORMATS:
        assert "(?P<" not in fmt.regex and "(?<" not in fmt.regex, fmt.name
        assert re.compile(fmt.regex).groups == len(fmt.fields), fmt.name


@pytest.mark.parametrize(
    "line",
    [
        "kafka_1  | [2021-06-09 10:00:00,001] INFO [GroupCoordinator 1]: Startup complete. (kafka.coordinator.group.GroupCoordinator)",
        "server.log.2021-06-09:[2021-06-09 10:00:00,001] INFO [GroupCoordinator 1]: Startup complete. (kafka.coordinator.group.GroupCoordinator)",
        "> [2021-06-09 10:00:00,001] INFO [GroupCoordinator 1]: Startup complete. (kafka.coordinator.group.GroupCoordinator)",
        "2021-05-04T16:41:31.006683114Z 2021-06-09 10:00:00,001 INFO [GroupCoordinator 1]: Startup complete. "
        "(kafka.coordinator.group.GroupCoordinator) [executor-Heartbeat]",
        "[2021-06-09 10:00:00,001] INFO [GroupCoordinator 1]: Startup complete. (kafka.coordinator.group.GroupCoordinator:66)",
    ],
)
def test_entry_layout_survives_prefixes_and_decorations(line: str) -> None:
    stripped = re.sub(PREFIX_RE, "", line)
    entry = re.search(ENTRY_RE, stripped)
    assert entry is not None
    assert entry.group(2) == "INFO" and entry.group(3) == "1"
    assert entry.group(6) == "Startup complete."
    assert entry.group(7).startswith("kafka.coordinator.group.GroupCoordinator")


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_substring_prefilter_never_hides_a_match(name: str) -> None:
    fmt = next(f for f in FORMATS if f.name == name)
    message = SAMPLES[name][0]
    if name == "old_partition_load":
        message = "Loading offsets and group metadata from __consumer_offsets-12"
    assert fmt.keyword in message
