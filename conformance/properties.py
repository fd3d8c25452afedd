"""The spec's safety properties (spec/GroupCoordinator.tla, "Properties") in Python, with the
spec's names, over a state given as the spec's variables.

Why a second copy: TLC checks them on the spec's own behaviours; these check them on the
implementation's, after every step of a Hypothesis run or a recorded trace, where TLC is too
slow to call per step. A state is a mapping from spec variable name to its value in
kgc.spec.values form (int, str, bool, ModelValue, frozenset, tuple, Record, TlaFunction),
which is what ITF traces read back as and what conformance.abstraction produces; member ids
are the spec's integers (NoMember = 0), clients are ModelValues.

Each property returns the list of what is wrong (empty: it holds), so a failure says which
conjunct broke and for which member or client. A property that needs a variable the state
does not carry (the abstraction left it unobserved) raises `Unobserved`; `check_state` and
`check_step` report those as skipped rather than as holding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ACTION_PROPERTIES",
    "AcknowledgedGenerationLeaderUnique",
    "INVARIANTS",
    "Constants",
    "PropertyReport",
    "Unobserved",
    "check_state",
    "check_step",
    "AssignmentMatchesGenerationMembers",
    "EmptyIffNoMembers",
    "GenerationMonotonic",
    "GroupSizeBounded",
    "LeaderIsMember",
    "NoSyncInPreparingRebalance",
    "OneSessionTimerPerMember",
    "ParkedRequestAnsweredOnce",
    "SingleLeaderPerGeneration",
    "StableRebalanceOnlyByTrigger",
    "TimersOrdered",
    "TypeOK",
    "OneOwnerPerInstanceId",
    "MemberIdSurvivesReload",
    "SelectedProtocolSupportedByAllMembers",
]

State = Mapping[str, Any]

NO_MEMBER = 0
NO_GEN = -1
GROUP_STATES = frozenset({"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"})
PHASES = frozenset({"Down", "Unjoined", "JoinWait", "Joined", "SyncWait", "Stable"})
TIMER_KINDS = frozenset({"Heartbeat", "Pending", "Join", "InitialJoin", "Sync"})
TIMER_DURS = frozenset({"session", "newMember", "none"})
TIMER_FIELDS = frozenset(
    {"kind", "member", "deadline", "dur", "gen", "delay", "remaining", "stale", "orphan", "olds", "nma"}
)
STORE_FIELDS = frozenset({"exists", "gen", "leader", "members", "plan"})


class Unobserved(KeyError):
    """The state lacks a variable (or a timer field) the property reads."""


@dataclass(frozen=True)
class Constants:
    """The model constants the properties read. `max_group_size` None is unbounded (the
    implementation's default); `clients` None means whatever clients the state names."""

    num_ids: int
    max_group_size: int | None = None
    max_failovers: int | None = None
    clients: frozenset[Any] | None = None
    #: clients configured with a group.instance.id (the spec's Instances, flattened)
    static_clients: frozenset[Any] = frozenset()


def _fn(v: Any) -> Any:
    """A TLA+ function as a mapping: one on 1..N (minstance) or on the empty set (staticMembers
    with no instances) is a tuple in TLC's output and in ITF."""
    if isinstance(v, tuple):
        return {i: x for i, x in enumerate(v, start=1)}
    return v


def _get(s: State, name: str) -> Any:
    try:
        return s[name]
    except KeyError:
        raise Unobserved(name) from None


def _field(rec: Mapping[str, Any], name: str, where: str) -> Any:
    try:
        return rec[name]
    except KeyError:
        raise Unobserved(f"{where}.{name}") from None


def _live(s: State) -> bool:
    return bool(_get(s, "loaded")) and _get(s, "gstate") != "Dead"


def _clients(s: State, k: Constants) -> Iterable[Any]:
    if k.clients is not None:
        return k.clients
    return _get(s, "cphase").keys()


def _timers(s: State) -> tuple[Mapping[str, Any], ...]:
    return tuple(_get(s, "timers"))


def _ids(k: Constants) -> range:
    return range(1, k.num_ids + 1)


def _show(x: Any) -> str:
    if isinstance(x, (set, frozenset)):
        return "{" + ", ".join(sorted(map(str, x))) + "}"
    return str(x)


# ---------------------------------------------------------------------------------------------
# State invariants
# ---------------------------------------------------------------------------------------------


def TypeOK(s: State, k: Constants) -> list[str]:
    bad: list[str] = []
    ids = set(_ids(k))
    ids0 = ids | {NO_MEMBER}

    def need(ok: bool, what: str) -> None:
        if not ok:
            bad.append(what)

    def subset(name: str, of: set[int]) -> None:
        v = _get(s, name)
        need(isinstance(v, frozenset) and v <= of, f"{name} = {_show(v)} not a subset of {_show(of)}")

    def is_nat(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    def is_gen(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= NO_GEN

    now = _get(s, "now")
    need(is_nat(now), f"now = {now} not a natural")
    for n, t in enumerate(_timers(s), start=1):
        where = f"timers[{n}]"
        need(_field(t, "kind", where) in TIMER_KINDS, f"{where}.kind = {t['kind']}")
        need(_field(t, "member", where) in ids0, f"{where}.member = {t['member']}")
        need(isinstance(_field(t, "deadline", where), int), f"{where}.deadline not an integer")
        for name, ok in (
            ("dur", lambda v: v in TIMER_DURS),
            ("gen", is_gen),
            ("delay", is_nat),
            ("remaining", is_nat),
            ("stale", lambda v: isinstance(v, bool)),
            ("orphan", lambda v: isinstance(v, bool)),
            ("olds", lambda v: isinstance(v, frozenset) and v <= ids),
            ("nma", lambda v: isinstance(v, bool)),
        ):
            if name in t:  # optional: an abstraction may leave bookkeeping fields out
                need(ok(t[name]), f"{where}.{name} = {_show(t[name])}")
    need(isinstance(_get(s, "loaded"), bool), "loaded not a boolean")
    if "loading" in s:  # loading \in BOOLEAN /\ (loading => ~loaded)
        need(isinstance(s["loading"], bool), f"loading = {_show(s['loading'])} not a boolean")
        need(not (s["loading"] is True and s["loaded"] is True), "loading and loaded at once")
    need(_get(s, "gstate") in GROUP_STATES, f"gstate = {s['gstate']}")
    need(is_nat(_get(s, "generation")), f"generation = {s['generation']} not a natural")
    need(_get(s, "leader") in ids0, f"leader = {s['leader']}")
    for name in ("members", "pending", "plan"):
        subset(name, ids)
    members = set(_get(s, "members"))
    for name in ("awaitingJoin", "awaitingSync", "newMembers"):
        subset(name, members)
    # A replaced static member's old id stays in pendingSyncMembers (replaceStaticMember).
    static_ids = {m for m, i in _fn(s.get("minstance", {})).items() if i}
    subset("pendingSync", members | static_ids)
    common = members & set(_get(s, "pending"))
    need(not common, f"members and pending share {_show(common)}")
    need(isinstance(_get(s, "newMemberAdded"), bool), "newMemberAdded not a boolean")
    if "mtimeouts" in s:  # [MemberIds -> Nat \X Nat], a tuple
        mt = s["mtimeouts"]
        need(
            isinstance(mt, tuple)
            and len(mt) == k.num_ids
            and all(isinstance(p, tuple) and len(p) == 2 and all(is_nat(x) for x in p) for p in mt),
            f"mtimeouts = {_show(mt)}",
        )
    next_id = _get(s, "nextId")
    need(isinstance(next_id, int) and 1 <= next_id <= k.num_ids + 1, f"nextId = {next_id}")
    if "store" in s:
        st = s["store"]
        need(set(st.keys()) == STORE_FIELDS, f"store fields {sorted(st.keys())}")
        if set(st.keys()) == STORE_FIELDS:
            need(
                isinstance(st["exists"], bool)
                and is_gen(st["gen"])
                and st["leader"] in ids0
                and st["members"] <= ids
                and st["plan"] <= ids,
                f"store = {st}",
            )
    if "failovers" in s and k.max_failovers is not None:
        need(0 <= s["failovers"] <= k.max_failovers, f"failovers = {s['failovers']}")
    for c in _clients(s, k):
        need(_get(s, "cphase")[c] in PHASES, f"cphase[{c}] = {s['cphase'][c]}")
        need(_get(s, "cmember")[c] in ids0, f"cmember[{c}] = {s['cmember'][c]}")
        need(is_gen(_get(s, "cgen")[c]), f"cgen[{c}] = {s['cgen'][c]}")
        need(isinstance(_get(s, "cleader")[c], bool), f"cleader[{c}] not a boolean")
        for name in ("cmembers", "cassign"):
            v = _get(s, name)[c]
            need(isinstance(v, frozenset) and v <= ids, f"{name}[{c}] = {_show(v)}")
        need(_get(s, "cwait")[c] in ids0, f"cwait[{c}] = {s['cwait'][c]}")
    for name in ("genLeaders", "genMembers"):
        if name in s:
            subset(name, ids)
    return bad


def TimersOrdered(s: State, k: Constants) -> list[str]:
    """Timers are ordered and none is overdue."""
    bad = []
    ts = _timers(s)
    now = _get(s, "now")
    for n in range(len(ts) - 1):
        if ts[n]["deadline"] > ts[n + 1]["deadline"]:
            bad.append(
                f"timers[{n + 1}].deadline {ts[n]['deadline']} > timers[{n + 2}].deadline {ts[n + 1]['deadline']}"
            )
    for n, t in enumerate(ts, start=1):
        if t["deadline"] < now:
            bad.append(f"timers[{n}] ({t['kind']}) overdue: deadline {t['deadline']} < now {now}")
    return bad


def SingleLeaderPerGeneration(s: State, k: Constants) -> list[str]:
    """No two members named leader (each in a successful JoinGroup response to itself) for one
    generation; once formed, a current member's client believes it leads iff it is the leader."""
    bad = []
    gl = _get(s, "genLeaders")
    if len(gl) > 1:
        bad.append(f"genLeaders = {_show(gl)}: two leaders for generation {s.get('generation')}")
    if _live(s) and s["gstate"] in ("CompletingRebalance", "Stable"):
        leader = _get(s, "leader")
        if not gl <= {leader}:
            bad.append(f"genLeaders = {_show(gl)} but leader = {leader}")
        members, gen = _get(s, "members"), _get(s, "generation")
        for c in _clients(s, k):
            m = s["cmember"][c]
            if (
                s["cphase"][c] in ("Joined", "SyncWait", "Stable")
                and m in members
                and s["cgen"][c] == gen
                and s["cleader"][c] != (m == leader)
                # a static leader rejoining a Stable group before v9 is told the old leader id
                and not (m == leader and c in k.static_clients and s["gstate"] == "Stable")
            ):
                bad.append(
                    f"client {c} (member {m}) believes leader={s['cleader'][c]}, coordinator's leader is {leader}"
                )
    return bad


def LeaderIsMember(s: State, k: Constants) -> list[str]:
    bad = []
    if _live(s):
        leader, members = _get(s, "leader"), _get(s, "members")
        if (leader == NO_MEMBER) != (not members):
            bad.append(f"leader = {leader} with members {_show(members)}")
        if leader != NO_MEMBER and leader not in members:
            bad.append(f"leader {leader} not in members {_show(members)}")
    return bad


def _live_join_op(s: State) -> bool:
    return any(t["kind"] in ("Join", "InitialJoin") and not _field(t, "stale", "timer") for t in _timers(s))


def EmptyIffNoMembers(s: State, k: Constants) -> list[str]:
    """Empty exactly when there are no members and no rebalance is under way."""
    if not _live(s):
        return []
    empty = s["gstate"] == "Empty"
    idle = not _get(s, "members") and not _live_join_op(s)
    if empty != idle:
        return [
            f"gstate = {s['gstate']} with members {_show(s['members'])} and "
            f"{'a' if _live_join_op(s) else 'no'} live DelayedJoin"
        ]
    return []


def GroupSizeBounded(s: State, k: Constants) -> list[str]:
    bad = []
    if k.max_group_size is None or not _live(s):
        return bad
    aj = _get(s, "awaitingJoin")
    if len(aj) > k.max_group_size:
        bad.append(f"{len(aj)} members awaiting join > MaxGroupSize {k.max_group_size}")
    # Static members are not counted: onCompleteJoin keeps those that did not rejoin.
    minstance = _fn(s.get("minstance", {}))
    dynamic = [m for m in _get(s, "members") if not minstance.get(m)]
    if s["gstate"] in ("CompletingRebalance", "Stable") and len(dynamic) > k.max_group_size:
        bad.append(
            f"{len(dynamic)} members in {s['gstate']} > MaxGroupSize {k.max_group_size} (static members not counted)"
        )
    return bad


def AssignmentMatchesGenerationMembers(s: State, k: Constants) -> list[str]:
    """The installed assignment covers exactly the members the generation was formed with, and
    every current member's client that synced holds it."""
    bad = []
    if not (_live(s) and s["gstate"] == "Stable"):
        return bad
    plan, gm, members = _get(s, "plan"), _get(s, "genMembers"), _get(s, "members")
    if plan != gm:
        bad.append(f"plan {_show(plan)} != genMembers {_show(gm)}")
    if gm != members:
        bad.append(f"genMembers {_show(gm)} != members {_show(members)}")
    gen = _get(s, "generation")
    for c in _clients(s, k):
        if (
            s["cphase"][c] == "Stable"
            and s["cmember"][c] in members
            and s["cgen"][c] == gen
            and s["cassign"][c] != plan
        ):
            bad.append(f"client {c} holds assignment {_show(s['cassign'][c])}, plan is {_show(plan)}")
    return bad


def ParkedRequestAnsweredOnce(s: State, k: Constants) -> list[str]:
    """Every client waiting on a parked JoinGroup/SyncGroup has it parked in the live group;
    no two clients wait on one callback; a JoinGroup parked in a Stable group is a static
    rejoin whose append is in flight (its callback answers it, once)."""
    bad = []
    live = _live(s)
    if live and _get(s, "gstate") == "Stable":
        in_flight = {w["obj"] for w in _get(s, "writes") if w["kind"] == "Static" and not w["stale"]}
        for m in sorted(_get(s, "awaitingJoin") - in_flight):
            bad.append(f"member {m} has a JoinGroup parked in Stable with no static append in flight")
    clients = list(_clients(s, k))
    for c in clients:
        ph, w = s["cphase"][c], s["cwait"][c]
        if ph == "JoinWait" and not (live and w in _get(s, "awaitingJoin")):
            bad.append(f"client {c} waits on a JoinGroup for member {w} that is not parked")
        if ph == "SyncWait" and not (live and w in _get(s, "awaitingSync")):
            bad.append(f"client {c} waits on a SyncGroup for member {w} that is not parked")
        if (ph in ("JoinWait", "SyncWait")) != (w != NO_MEMBER):
            bad.append(f"client {c} in {ph} with cwait = {w}")
    for c in clients:
        for d in clients:
            if (
                c != d
                and s["cwait"][c] != NO_MEMBER
                and s["cphase"][c] == s["cphase"][d]
                and s["cwait"][c] == s["cwait"][d]
            ):
                bad.append(f"clients {c} and {d} both wait on member {s['cwait'][c]}")
    return bad


def _live_timers_of(s: State, kind: str, m: int) -> int:
    return sum(
        1
        for t in _timers(s)
        if t["kind"] == kind
        and t["member"] == m
        and not _field(t, "stale", "timer")
        and not _field(t, "orphan", "timer")
    )


def OneSessionTimerPerMember(s: State, k: Constants) -> list[str]:
    """Every member not awaiting a response has exactly one live session timer, none outlives
    its member; every pending member has exactly one expiration, none outlives it."""
    bad = []
    ts = _timers(s)
    if _live(s):
        members, pending = _get(s, "members"), _get(s, "pending")
        waiting = _get(s, "awaitingJoin") | _get(s, "awaitingSync")
        for m in sorted(members):
            n = _live_timers_of(s, "Heartbeat", m)
            if m not in waiting and n != 1:
                bad.append(f"member {m} (not awaiting a response) has {n} live session timers")
            elif n > 1:
                bad.append(f"member {m} has {n} live session timers")
        for m in sorted(pending):
            n = _live_timers_of(s, "Pending", m)
            if n != 1:
                bad.append(f"pending member {m} has {n} live expirations")
        for n, t in enumerate(ts, start=1):
            if t["stale"] or t["orphan"]:
                continue
            if t["kind"] == "Heartbeat" and t["member"] not in members:
                bad.append(f"timers[{n}]: session timer of member {t['member']}, not a member")
            if t["kind"] == "Pending" and t["member"] not in pending:
                bad.append(f"timers[{n}]: expiration of {t['member']}, not a pending member")
    else:
        for n, t in enumerate(ts, start=1):
            if not _field(t, "stale", "timer"):
                bad.append(f"timers[{n}] ({t['kind']}) live while the group is not")
    return bad


# ---------------------------------------------------------------------------------------------
# Action properties ([][A]_v): checked on a pair of consecutive states
# ---------------------------------------------------------------------------------------------


def GenerationMonotonic(s: State, t: State, k: Constants) -> list[str]:
    """Within one group incarnation the generation never decreases."""
    if _get(s, "loaded") and _get(t, "loaded") and _get(t, "generation") < _get(s, "generation"):
        return [f"generation went from {s['generation']} to {t['generation']}"]
    return []


SYNC_STEPS = frozenset({"SyncGroupLeader", "SyncGroupFollower"})


def NoSyncInPreparingRebalance(s: State, t: State, k: Constants) -> list[str]:
    """No SyncGroup succeeds or is parked while the group prepares a rebalance (the spec's
    action property: the step's answer, and nothing parked in the state it ends in)."""
    bad = []
    la = _get(t, "lastAction")
    if _live(s) and s["gstate"] == "PreparingRebalance" and la["name"] in SYNC_STEPS:
        if la.get("resp") in ("NONE", "PARKED"):
            bad.append(f"{la['name']} of member {la['member']} answered {la['resp']} in PreparingRebalance")
    if _live(t) and t["gstate"] == "PreparingRebalance":
        aw = _get(t, "awaitingSync")
        if aw:
            bad.append(f"awaitingSync = {_show(aw)} in PreparingRebalance")
        for c in _clients(t, k):
            if t["cphase"][c] == "SyncWait":
                bad.append(f"client {c} waits on a SyncGroup in PreparingRebalance")
    return bad


def AcknowledgedGenerationLeaderUnique(s: State, t: State, k: Constants) -> list[str]:
    """Once a generation's leader SyncGroup was answered as stored (ackLog), no JoinGroup
    response names another leader for it, in any later incarnation: the step's new leaderLog
    entries against every acknowledgement so far (the leader named before the acknowledgement
    is Kafka's own generation reuse, GenerationLeaderUniqueAcrossFailovers, not this). Two
    member ids of one group.instance.id are one leader (the spec's SameLeader)."""
    named = _get(t, "leaderLog") - _get(s, "leaderLog")
    acked = _get(t, "ackLog")
    instance = _fn(t.get("minstance", {}))

    def same(m: int, a: int) -> bool:
        return m == a or bool(instance.get(m)) and instance.get(m) == instance.get(a)

    return [
        f"generation {g} was acknowledged with leader {a}; a JoinGroup response names {m}"
        for g, m in sorted(named)
        for ag, a in sorted(acked)
        if ag == g and not same(m, a)
    ]


def _stable_rebalance_trigger(s: State, t: State, la: Mapping[str, Any]) -> bool:
    """One of the reasons Kafka 3.x rebalances a Stable group (the spec lists each handler)."""
    members, members2 = _get(s, "members"), _get(t, "members")
    name, member = la["name"], _field(la, "member", "lastAction")
    if name == "JoinGroupUnknownMember":
        return la.get("newMember", NO_MEMBER) in members2
    if name == "JoinGroupPendingMember":
        return member in _get(s, "pending") and member in members2
    if name == "JoinGroupKnownMember":
        # changed: the flag (metadata bytes), or the member's protocol names (a reloaded member
        # holds only the group's protocol; its JoinGroup sends its client's list)
        renamed = "mprotocols" in s and s["mprotocols"][member - 1] != _get(t, "mprotocols")[member - 1]
        return member in members and (member == _get(s, "leader") or bool(la["flag"]) or renamed)
    if name in ("LeaveGroup", "LeaveGroupByInstanceId", "SessionTimeoutExpiry", "NewMemberJoinTimeout"):
        return member in members and member not in members2
    if name == "DelayedSyncExpiry":
        ps = _get(s, "pendingSync")
        static_ids = {m for m, i in _fn(s.get("minstance", {})).items() if i}
        return bool(ps) and ps <= members | static_ids
    return False


def StableRebalanceOnlyByTrigger(s: State, t: State, k: Constants) -> list[str]:
    """A Stable group starts a rebalance only for the reasons Kafka 3.x has: a new member's or
    the leader's (or a changed member's) JoinGroup, a member's LeaveGroup (its own, or an admin's
    by group.instance.id) or session expiry,
    DelayedSync expiry with current members that never synced."""
    if not _stable_rebalance_started(s, t):
        return []
    la = _get(t, "lastAction")
    if _stable_rebalance_trigger(s, t, la):
        return []
    return [f"Stable -> {t['gstate']} by {la['name']} (member {la['member']}), not one of Kafka's triggers"]


def _stable_rebalance_started(s: State, t: State) -> bool:
    """The spec's StableRebalanceStarted: the step leaves a live Stable group preparing a
    rebalance, or (prepared and completed at once, every member having rejoined) at the next
    generation."""
    if not (_live(s) and s["gstate"] == "Stable"):
        return False
    return _get(t, "gstate") == "PreparingRebalance" or (_live(t) and _get(t, "generation") != s["generation"])


def NoCommitOutsideCurrentGeneration(s: State, t: State, k: Constants) -> list[str]:
    """No OffsetCommit is accepted from a member outside the current generation (what
    generations exist to protect): one answered NONE names a member of the live group and the
    group's generation, as they were when it was handled."""
    la = _get(t, "lastAction")
    if la["name"] != "HandleCommitOffsets" or la.get("resp") != "NONE":
        return []
    member, gen = _field(la, "member", "lastAction"), _field(la, "gen", "lastAction")
    if not _live(s):
        return [f"commit of member {member} accepted while the group is not live"]
    bad = []
    if member not in _get(s, "members"):
        bad.append(f"commit of member {member}, no member of {_show(s['members'])}, accepted")
    if gen != _get(s, "generation"):
        bad.append(f"commit of member {member} with generation {gen} accepted in generation {s['generation']}")
    return bad


def OneOwnerPerInstanceId(s: State, k: Constants) -> list[str]:
    """At most one member per group.instance.id, the one staticMembers names (GroupMetadata.add,
    replaceStaticMember and remove keep the two in step)."""
    if not _live(s) or "staticMembers" not in s:
        # a state without the static-membership variables (the abstraction of a run with
        # dynamic members only does not carry them yet) names no instance id
        return []
    static, minstance, members = _fn(_get(s, "staticMembers")), _fn(_get(s, "minstance")), _get(s, "members")
    bad = []
    for inst, owner in static.items():
        holders = {m for m in members if minstance.get(m) == inst}
        if not holders <= ({owner} - {NO_MEMBER}):
            bad.append(f"instance {_show(inst)} is held by members {_show(holders)}, staticMembers names {owner}")
        if owner != NO_MEMBER and (owner not in members or minstance.get(owner) != inst):
            bad.append(f"staticMembers names {owner} for instance {_show(inst)}, not a member of it")
    return bad


def SelectedProtocolSupportedByAllMembers(s: State, k: Constants) -> list[str]:
    """A formed generation's protocol is one every member supports: the leader runs that
    assignor and every member decodes its assignment (selectProtocol votes among
    candidateProtocols; supportsProtocols turns away a member with none in common)."""
    if not _live(s) or _get(s, "gstate") not in ("CompletingRebalance", "Stable") or "protocol" not in s:
        # a state without the protocol variables (recorded before they existed) selects none
        return []
    protocol, supported = _get(s, "protocol"), _get(s, "mprotocols")
    if protocol == "":
        return [f"{s['gstate']} with no protocol selected"]
    return [
        f"member {m} does not support {protocol!r} (it sent {list(supported[m - 1])})"
        for m in sorted(_get(s, "members"))
        if protocol not in supported[m - 1]
    ]


def MemberIdSurvivesReload(s: State, k: Constants) -> list[str]:
    """Every member of the Stable, stored generation that a client holds is in the store (with
    its instance id): a reload restores exactly the store."""
    if not (k.max_failovers and _live(s) and s["gstate"] == "Stable"):
        return []
    st = _get(s, "store")
    gen, members = _get(s, "generation"), _get(s, "members")
    if not (st["exists"] and st["gen"] == gen):
        return []
    # without static-membership variables every member is dynamic
    minstance, stored_static = _fn(s.get("minstance", {})), _fn(s.get("storeStatic", {}))
    bad = []
    for c in _clients(s, k):
        m = s["cmember"][c]
        if s["cphase"][c] in ("Joined", "SyncWait", "Stable") and m in members and s["cgen"][c] == gen:
            if m not in st["members"]:
                bad.append(
                    f"client {c} holds member {m} of stored generation {gen}; the store has {_show(st['members'])}"
                )
            inst = minstance.get(m)
            if inst and stored_static.get(inst) != m:
                bad.append(
                    f"client {c} holds static member {m}; the store maps its instance to {stored_static.get(inst)}"
                )
    return bad


def GenerationLeaderUniqueAcrossFailovers(s: State, k: Constants) -> list[str]:
    """SingleLeaderPerGeneration's first half across coordinator failovers: no generation
    number names two leaders, over every incarnation of the group (leaderLog)."""
    by_gen: dict[int, set[int]] = {}
    for gen, member in _get(s, "leaderLog"):
        by_gen.setdefault(gen, set()).add(member)
    return [
        f"leaderLog: generation {g} had leaders {_show(frozenset(ms))}"
        for g, ms in sorted(by_gen.items())
        if len(ms) > 1
    ]


StateProperty = Callable[[State, Constants], list[str]]
StepProperty = Callable[[State, State, Constants], list[str]]

#: The spec's invariants, in the order models/small.cfg lists them.
INVARIANTS: dict[str, StateProperty] = {
    "TypeOK": TypeOK,
    "TimersOrdered": TimersOrdered,
    "SingleLeaderPerGeneration": SingleLeaderPerGeneration,
    "LeaderIsMember": LeaderIsMember,
    "EmptyIffNoMembers": EmptyIffNoMembers,
    "GroupSizeBounded": GroupSizeBounded,
    "AssignmentMatchesGenerationMembers": AssignmentMatchesGenerationMembers,
    "ParkedRequestAnsweredOnce": ParkedRequestAnsweredOnce,
    "OneSessionTimerPerMember": OneSessionTimerPerMember,
    "OneOwnerPerInstanceId": OneOwnerPerInstanceId,
    "MemberIdSurvivesReload": MemberIdSurvivesReload,
    "SelectedProtocolSupportedByAllMembers": SelectedProtocolSupportedByAllMembers,
}

#: Properties Kafka 3.x itself does not have (spec/models/finding_*.cfg): checked only when
#: named (kgc replay-cex of a finding's counterexample), never by default.
FINDINGS: dict[str, StateProperty] = {
    "GenerationLeaderUniqueAcrossFailovers": GenerationLeaderUniqueAcrossFailovers,
}

#: The spec's action properties ([][A]_vars), checked on consecutive states.
ACTION_PROPERTIES: dict[str, StepProperty] = {
    "GenerationMonotonic": GenerationMonotonic,
    "NoSyncInPreparingRebalance": NoSyncInPreparingRebalance,
    "StableRebalanceOnlyByTrigger": StableRebalanceOnlyByTrigger,
    "NoCommitOutsideCurrentGeneration": NoCommitOutsideCurrentGeneration,
    "AcknowledgedGenerationLeaderUnique": AcknowledgedGenerationLeaderUnique,
}


@dataclass
class PropertyReport:
    """Violations by property name; `skipped` names properties the state could not decide
    (with the variable missing)."""

    violations: dict[str, list[str]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.violations

    def __str__(self) -> str:
        return "; ".join(f"{name}: {', '.join(what)}" for name, what in self.violations.items())


def check_state(
    s: State, k: Constants, names: Iterable[str] | None = None, report: PropertyReport | None = None
) -> PropertyReport:
    report = report if report is not None else PropertyReport()
    for name in names if names is not None else INVARIANTS:
        prop = INVARIANTS.get(name) or FINDINGS.get(name)
        if prop is None:
            continue
        try:
            bad = prop(s, k)
        except Unobserved as e:
            report.skipped[name] = str(e)
            continue
        if bad:
            report.violations[name] = bad
    return report


def check_step(
    s: State, t: State, k: Constants, names: Iterable[str] | None = None, report: PropertyReport | None = None
) -> PropertyReport:
    """The action properties on the step s -> t, and the invariants on t."""
    report = report if report is not None else PropertyReport()
    wanted = list(names) if names is not None else None
    for name, prop in ACTION_PROPERTIES.items():
        if wanted is not None and name not in wanted:
            continue
        try:
            bad = prop(s, t, k)
        except Unobserved as e:
            report.skipped[name] = str(e)
            continue
        if bad:
            report.violations[name] = bad
    return check_state(t, k, wanted, report)
