"""Every INFO/WARN/ERROR message Kafka's classic group coordinator logged from 0.10.0 to 3.9, as
one table of regexes: which event each message is, and which fields it carries.

Why a table: broker logs are the only record people have after an incident, and the message
texts changed a dozen times over the releases (0.10.0's "restabilize", the offsets partition
added in 0.11, the state and reason in 2.1, the member count in 2.8, the leader id in 3.0). The
Spark parser (`logs_parse.py`) evaluates these regexes in the JVM (regexp_extract), the Python
fallback for tests with `re`: every pattern is written in the common subset of Java and Python
regex syntax (no named groups; fields are numbered in `fields`).

Sources: apache/kafka, core/src/main/scala/kafka/coordinator/group/{GroupCoordinator,
GroupMetadataManager,GroupMetadata}.scala (core/.../coordinator/ before 0.11), read at the tags
0.10.0.0, 0.10.1.0, 0.10.2.0, 0.11.0.0, 1.0.0, 1.1.0, 2.0.0-2.8.0, 3.0.0-3.8.0 and 3.9.0-rc3. The
`since`/`until` columns give the first and last release with each wording.

Log prefixes (`logIdent`): "[GroupCoordinator B]: " (all versions); "[Group Metadata Manager on
Broker B]: " (0.10-0.11), "[GroupMetadataManager brokerId=B] " (1.0+); GroupMetadata.loadGroup
logs through the companion object, no prefix, logger `kafka.coordinator.group.GroupMetadata$`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "ENTRY_RE",
    "FIELDS",
    "FORMATS",
    "COORDINATOR_HINTS",
    "COORDINATOR_HINT_RE",
    "LogFormat",
    "PREFIX_RE",
    "match_message",
]

# A group id as it appears in logs: anything up to whitespace (real ids with spaces are rare;
# redacted ids such as <redacted>, ***, xxx-group are kept as they are).
_G = r"(\S+?)"
_GEN = r"(-?\d+)"
_M = r"(\S+)"
_STATE = r"(Empty|PreparingRebalance|CompletingRebalance|AwaitingSync|Stable|Dead)"
_PART = r"\((?:__consumer_offsets|\S+)-(\d+)\)"

#: The fields a format can carry; every event row has all of them (empty when absent).
FIELDS: tuple[str, ...] = ("group", "generation", "member", "state", "reason", "members", "error", "partition")


@dataclass(frozen=True)
class LogFormat:
    """One message wording. `kind` is the event it reports (several wordings share a kind);
    `fields` names the regex's capture groups in order; `since`/`until` cite the releases."""

    name: str
    kind: str
    regex: str
    fields: tuple[str, ...]
    since: str
    until: str = "3.9"
    level: str = "INFO"

    @property
    def keyword(self) -> str:
        """The longest fixed text the regex requires: Spark checks it with a plain substring
        search before running the regex (most lines fail there, at a fraction of the cost)."""
        return _longest_literal(self.regex)


def _longest_literal(regex: str) -> str:
    """Only text outside groups and classes counts (a group may be optional or an alternation)."""
    pieces, current, i, parens, brackets = [], "", 0, 0, 0
    while i < len(regex):
        ch = regex[i]
        if ch == "\\" and i + 1 < len(regex):
            nxt = regex[i + 1]
            if nxt.isalnum() or parens or brackets:
                pieces.append(current)
                current = ""
            else:
                current += nxt
            i += 2
            continue
        if ch == "[":
            brackets += 1
        elif ch == "]":
            brackets = max(0, brackets - 1)
        elif ch == "(" and not brackets:
            parens += 1
        elif ch == ")" and not brackets:
            parens = max(0, parens - 1)
        if ch in "?*{" and current:
            current = current[:-1]  # the quantified character is optional
        if parens or brackets or ch in "()[]{}?*+|^$.":
            pieces.append(current)
            current = ""
        else:
            current += ch
        i += 1
    pieces.append(current)
    if "|" in regex.replace("\\|", "") and not _alternation_inside_groups_only(regex):
        return ""
    return max(pieces, key=len)


def _alternation_inside_groups_only(regex: str) -> bool:
    depth, i = 0, 0
    while i < len(regex):
        ch = regex[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            return False
        i += 1
    return True


FORMATS: tuple[LogFormat, ...] = (
    # --- rebalance start: GroupCoordinator.prepareRebalance -------------------------------
    LogFormat(
        "prepare_reason",
        "prepare",
        rf"Preparing to rebalance group {_G} in state {_STATE} with old generation {_GEN} {_PART} \(reason: (.*)\)",
        ("group", "state", "generation", "partition", "reason"),
        "2.1",
    ),
    LogFormat(
        "prepare_partition",
        "prepare",
        rf"Preparing to rebalance group {_G} with old generation {_GEN} {_PART}",
        ("group", "generation", "partition"),
        "0.11",
        "2.0",
    ),
    LogFormat(
        "prepare_restabilize",
        "prepare",
        rf"Preparing to restabilize group {_G} with old generation {_GEN}",
        ("group", "generation"),
        "0.10.0",
        "0.10.2",
    ),
    # --- rebalance end: GroupCoordinator.onCompleteJoin ------------------------------------
    LogFormat(
        "stabilized_members",
        "stabilized",
        rf"Stabilized group {_G} generation {_GEN} {_PART} with (\d+) members",
        ("group", "generation", "partition", "members"),
        "2.8",
    ),
    LogFormat(
        "stabilized_partition",
        "stabilized",
        rf"Stabilized group {_G} generation {_GEN} {_PART}",
        ("group", "generation", "partition"),
        "0.11",
        "2.7",
    ),
    LogFormat(
        "stabilized",
        "stabilized",
        rf"Stabilized group {_G} generation {_GEN}$",
        ("group", "generation"),
        "0.10.0",
        "0.10.2",
    ),
    LogFormat(
        "empty_partition",
        "empty",
        rf"Group {_G} with generation {_GEN} is now empty {_PART}",
        ("group", "generation", "partition"),
        "0.11",
    ),
    LogFormat(
        "empty",
        "empty",
        rf"Group {_G} with generation {_GEN} is now empty$",
        ("group", "generation"),
        "0.10.1",
        "0.10.2",
    ),
    LogFormat(
        "no_rejoin",
        "no_rejoin",
        rf"Group {_G} could not complete rebalance because no members rejoined",
        ("group",),
        "2.3",
        level="ERROR",
    ),
    LogFormat("dead_skip", "dead_skip", rf"Group {_G} is dead, skipping rebalance stage", ("group",), "2.4"),
    LogFormat(
        "removed_dynamic",
        "removed_dynamic",
        rf"Group {_G} removed dynamic members who haven't joined: (.*)",
        ("group", "reason"),
        "2.8",
    ),
    # --- SyncGroup --------------------------------------------------------------------------
    LogFormat(
        "assignment_leader",
        "assignment",
        rf"Assignment received from leader {_M} for group {_G} for generation {_GEN}\. The group has (\d+) members",
        ("member", "group", "generation", "members"),
        "3.0",
    ),
    LogFormat(
        "assignment",
        "assignment",
        rf"Assignment received from leader for group {_G} for generation {_GEN}(?:\.|$| )",
        ("group", "generation"),
        "0.10.0",
        "2.8",
    ),
    LogFormat(
        "empty_assignments",
        "empty_assignment",
        rf"Setting empty assignments for members (.*) of {_G} for generation {_GEN}",
        ("reason", "group", "generation"),
        "2.8",
        level="WARN",
    ),
    LogFormat(
        "empty_assignment_sent",
        "empty_assignment",
        rf"Sending empty assignment to member {_M} of {_G} for generation {_GEN} with no errors",
        ("member", "group", "generation"),
        "2.8",
        level="WARN",
    ),
    # --- store errors: GroupMetadataManager.storeGroup's callback, GroupCoordinator -----------
    LogFormat(
        "store_error",
        "store_error",
        rf"Appending metadata message for group {_G} generation {_GEN} failed due to (?:unexpected error: )?(\w+)",
        ("group", "generation", "error"),
        "0.10.0",
        level="ERROR",
    ),
    LogFormat(
        "store_error_debug",
        "store_error",
        rf"Metadata from group {_G} with generation {_GEN} failed when appending to log due to (\w+)",
        ("group", "generation", "error"),
        "0.10.0",
        level="DEBUG",
    ),
    LogFormat(
        "empty_store_failed",
        "store_error",
        rf"Failed to write empty metadata for group {_G}: (.*)",
        ("group", "error"),
        "0.10.1",
        level="WARN",
    ),
    LogFormat(
        "static_store_failed",
        "store_error",
        rf"Failed to persist metadata for group {_G}: (.*)",
        ("group", "error"),
        "2.7",
        level="WARN",
    ),
    # --- members ----------------------------------------------------------------------------
    LogFormat(
        "member_failed",
        "member_expired",
        rf"Member {_M} in group ?{_G} has failed, removing it from the group",
        ("member", "group"),
        "1.0",
    ),
    LogFormat(
        "pending_expired",
        "pending_expired",
        rf"Pending member {_M} in group {_G} has been removed after session timeout expiration",
        ("member", "group"),
        "2.2",
    ),
    LogFormat(
        "member_left_reason",
        "member_left",
        rf"Member MemberMetadata\(memberId={_M}, .*\) has left group {_G} through explicit `LeaveGroup`(?:; client reason: (.*)| request)",
        ("member", "group", "reason"),
        "3.0",
    ),
    LogFormat(
        "static_member_left",
        "member_left",
        rf"Member\[group\.instance\.id .*, member\.id {_M}\] in group {_G} has left, removing it from the group",
        ("member", "group"),
        "2.4",
        "2.8",
    ),
    LogFormat(
        "pending_left",
        "pending_left",
        rf"Pending member with memberId={_M} has left group {_G} through explicit `LeaveGroup` request",
        ("member", "group"),
        "3.0",
    ),
    LogFormat(
        "pending_leaving",
        "pending_left",
        rf"Pending member {_M} is leaving group {_G}\.",
        ("member", "group"),
        "2.2",
        "2.8",
    ),
    LogFormat(
        "dynamic_join_pending",
        "member_join",
        rf"Dynamic member with unknown member id joins group {_G} in {_STATE} state\. Created a new member id {_M} and request",
        ("group", "state", "member"),
        "3.0",
    ),
    LogFormat(
        "unknown_member_join",
        "member_join",
        rf"(?:Dynamic|Static) Member with unknown member id joins group {_G} in {_STATE} state\. Created a new member id {_M} for",
        ("group", "state", "member"),
        "2.5",
    ),
    LogFormat(
        "static_join_new",
        "member_join",
        rf"Static member with groupInstanceId=\S+ and unknown member id joins group {_G} in {_STATE} state\. Created a new member id {_M}",
        ("group", "state", "member"),
        "3.0",
    ),
    LogFormat(
        "static_join_replace",
        "static_replace",
        rf"Static member with groupInstanceId=\S+ and unknown member id joins group {_G} in {_STATE} state\. Replacing previously mapped member {_M}",
        ("group", "state", "member"),
        "3.0",
    ),
    LogFormat(
        "static_rejoin",
        "static_replace",
        rf"Static member \S+ (?:of group {_G} )?with unknown member id rejoins, assigning new member id {_M},",
        ("group", "member"),
        "2.3",
        "2.8",
    ),
    LogFormat(
        "static_fenced",
        "static_fenced",
        rf"Request memberId={_M} for static member with groupInstanceId=\S+ is fenced by current memberId=\S+ during operation (\S+)",
        ("member", "reason"),
        "3.0",
    ),
    LogFormat(
        "rejoin_unexpected_state",
        "unexpected_state",
        rf"Attempt to add rejoining member {_M} of group {_G} in unexpected group state {_STATE}",
        ("member", "group", "state"),
        "2.2",
        level="WARN",
    ),
    LogFormat(
        "heartbeat_after_unload",
        "late_expiry",
        rf"Received notification of heartbeat expiration for member {_M} after group {_G} had already been unloaded",
        ("member", "group"),
        "2.4",
    ),
    LogFormat(
        "member_not_found",
        "late_expiry",
        rf"Member id {_M} was not found in {_G} during heartbeat",
        ("member", "group"),
        "2.4",
        "2.8",
    ),
    LogFormat(
        "static_stable_join",
        "static_noop",
        r"Static member which joins during Stable stage and doesn't affect selectProtocol will not trigger rebalance",
        (),
        "2.7",
    ),
    LogFormat(
        "leader_changed",
        "leader_changed",
        r"Group leader \[member\.id: (\S+), ",
        ("member",),
        "2.4",
    ),
    # --- loading, unloading, deletion -----------------------------------------------------
    LogFormat(
        "loading",
        "loaded",
        rf"Loading group metadata for {_G} with generation {_GEN}",
        ("group", "generation"),
        "0.10.0",
    ),
    LogFormat(
        "unloading",
        "unloaded",
        rf"Unloading group metadata for {_G} with generation {_GEN}",
        ("group", "generation"),
        "0.10.0",
    ),
    LogFormat(
        "loaded_member",
        "loaded_member",
        rf"Loaded member MemberMetadata\(memberId={_M}, .*\) in group {_G} with generation {_GEN}",
        ("member", "group", "generation"),
        "2.8",
    ),
    LogFormat(
        "static_loaded",
        "loaded_member",
        rf"Static member MemberMetadata\(memberId={_M}, .*\)\.groupInstanceId of group {_G} loaded with member id \S+ at generation {_GEN}",
        ("member", "group", "generation"),
        "trunk 2.6-dev (apache/kafka#8437's broker; in no release tag)",
        "trunk 2.6-dev",
    ),
    LogFormat(
        "dead", "dead", rf"Group {_G} transitioned to Dead in generation {_GEN}", ("group", "generation"), "0.10.2"
    ),
    LogFormat(
        "dead_removed",
        "dead",
        rf"Group {_G} generation {_GEN} is dead and removed",
        ("group", "generation"),
        "0.10.0",
        "0.10.1",
    ),
    LogFormat(
        "groups_deleted", "groups_deleted", r"The following groups were deleted: (.*)\. A total of", ("reason",), "1.1"
    ),
    # --- partition-level (no group): coordinator moves ---------------------------------------
    LogFormat(
        "elected",
        "partition",
        r"Elected as the group coordinator for partition (\d+)",
        ("partition",),
        "2.8",
    ),
    LogFormat(
        "resigned",
        "partition",
        r"Resigned as the group coordinator for partition (\d+)",
        ("partition",),
        "2.8",
    ),
    LogFormat(
        "partition_load",
        "partition",
        r"(?:Scheduling loading of|Already loading|Finished loading|Not loading) offsets and group metadata (?:from|for) \S+-(\d+)",
        ("partition",),
        "0.11",
    ),
    LogFormat(
        "partition_unload",
        "partition",
        r"(?:Scheduling unloading of offsets and group metadata from|Finished unloading|Not removing offsets and group metadata for) \S+-(\d+)",
        ("partition",),
        "0.11",
    ),
    LogFormat(
        "old_partition_load",
        "partition",
        r"(?:Loading offsets and group metadata from|Finished loading offsets from|Offset load from) \S+-(\d+)",
        ("partition",),
        "0.10.0",
        "0.10.2",
    ),
    LogFormat(
        "offsets_housekeeping",
        "housekeeping",
        r"(?:Removed \d+ expired offsets in|Removed \d+ offsets associated with deleted partitions|The following offsets of the group \S+ were deleted|Removed \d+ cached (?:offsets|groups) for)",
        (),
        "0.10.0",
    ),
    LogFormat(
        "lifecycle",
        "housekeeping",
        r"^(?:Starting up|Startup complete|Shutting down|Shutdown complete)\.",
        (),
        "0.10.0",
    ),
)

#: The physical-line prefixes real logs come with, removed before matching (repeatable): markdown
#: quoting (`> `), line numbers (`123:` `123 `), grep's file prefix (`server.log.2021-06-09:`),
#: docker-compose (`kafka_1  | `), journald / syslog (`Jun 09 10:00:00 host kafka[123]: `).
PREFIX_RE = (
    r"^(?:\s*>\s?|\s*\d+[:|]\s*|[\w./-]*\.log(?:\.[\w-]+)?[:-]\d*:?\s*|[\w.-]+\s+\|\s|"
    r"[A-Z][a-z]{2} +\d+ \d\d:\d\d:\d\d \S+ [\w.@/-]+(?:\[\d+\])?: )*"
)

#: A Kafka log4j entry after the prefixes: [timestamp] LEVEL message (logger). The brackets are
#: optional (Strimzi's layout has none), so is the logger (hard-wrapped or truncated pastes) and
#: its line number (`%c:%L` layouts); anything after it (thread names, CloudWatch fields) is dropped.
ENTRY_RE = (
    r"\[?(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d{1,3})?)(?:[^\]\s]*\])?\s+(TRACE|DEBUG|INFO|WARN|ERROR|FATAL)\s+"
    r"(?:\[(?:GroupCoordinator (\d+)|Group Metadata Manager on Broker (\d+)|GroupMetadataManager brokerId=(\d+))\]:?\s*)?"
    r"(.*?)(?:\s+\((kafka\.coordinator(?:\.group)?\.[\w$]+)(?::\d+)?\)(.*))?$"
)

#: Fixed texts of lines that look like the coordinator (kept as `unparsed` when no format
#: matches them): logs_scan and Spark check them with substring searches, COORDINATOR_HINT_RE says the same.
COORDINATOR_HINTS: tuple[str, ...] = (
    "GroupCoordinator",
    "GroupMetadata",
    "Group Metadata Manager",
    "kafka.coordinator.group",
    "rebalance group",
    "restabilize group",
    "Stabilized group",
    "is now empty",
    " in group",
    "group metadata for",
)

#: Lines that look like the coordinator (kept as `unparsed` when no format matches them).
COORDINATOR_HINT_RE = (
    r"GroupCoordinator|GroupMetadataManager|Group Metadata Manager|kafka\.coordinator\.group|"
    r"(?i:rebalance group|Stabilized group|is now empty|in group \S+ has|group metadata for)"
)

_COMPILED = tuple((fmt, re.compile(fmt.regex)) for fmt in FORMATS)


def match_message(message: str) -> tuple[LogFormat, dict[str, str]] | None:
    """The first format whose regex finds a match in `message` (the order of FORMATS, as the
    Spark CASE expression evaluates them), with its fields; None when none does."""
    for fmt, rx in _COMPILED:
        found = rx.search(message)
        if found:
            return fmt, {name: found.group(i + 1) or "" for i, name in enumerate(fmt.fields)}
    return None
