"""The abstraction function and the action mapping on hand-written steps."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kgc.conformance.abstraction import (
    AbstractionError,
    IdMap,
    SpecConstants,
    World,
    abstract_state,
    apply_action,
    cfg_constants,
    not_enabled,
)
from kgc.spec.values import ModelValue, Record

C1, C2 = ModelValue("c1"), ModelValue("c2")
K = SpecConstants(
    clients=("c1", "c2"),
    num_ids=3,
    session=2,
    rebalance=3,
    initial_delay=1,
    new_member_timeout=3,
    max_group_size=2,
    max_failovers=1,
    ms_per_unit=250,
)


def act(name: str, client: str | None = None, flag: bool = False, dt: int = 0) -> Record:
    return Record(
        {
            "name": name,
            "client": ModelValue(client or "NoClient"),
            "member": 0,
            "gen": -1,
            "flag": flag,
            "newMember": 0,
            "resp": "NONE",
            "dt": dt,
        }
    )


def run(world: World, *steps: Record) -> dict:
    for la in steps:
        apply_action(world, la)
    return abstract_state(world)


def test_initial_state_is_the_spec_init() -> None:
    s = abstract_state(World(K))
    assert s["now"] == 0 and s["timers"] == () and s["loaded"] is True
    assert (s["gstate"], s["generation"], s["leader"], s["nextId"]) == ("Dead", 0, 0, 1)
    assert s["store"] == Record({"exists": False, "gen": 0, "leader": 0, "members": frozenset(), "plan": frozenset()})
    assert dict(s["cphase"]) == {C1: "Unjoined", C2: "Unjoined"}
    assert dict(s["cgen"]) == {C1: -1, C2: -1}


def test_ids_follow_first_appearance_not_join_order() -> None:
    """c1's pending id appears first (MEMBER_ID_REQUIRED), c2 joins as a member before c1
    does: spec ids 1 (c1) and 2 (c2) although c2 is the first member."""
    w = World(K)
    s = run(w, act("JoinGroupUnknownMember", "c1", flag=True))
    assert s["pending"] == {1} and s["cmember"][C1] == 1 and s["members"] == frozenset()
    assert s["timers"][0]["kind"] == "Pending" and s["timers"][0]["deadline"] == 2
    s = run(w, act("JoinGroupUnknownMember", "c2"))
    assert s["members"] == {2} and s["leader"] == 2 and s["cwait"][C2] == 2
    assert s["cphase"][C2] == "JoinWait" and s["cmember"][C2] == 0
    assert [(t["kind"], t["member"], t["dur"], t["deadline"]) for t in s["timers"]] == [
        ("InitialJoin", 0, "none", 1),
        ("Pending", 1, "session", 2),
        ("Heartbeat", 2, "newMember", 3),
    ]
    s = run(w, act("JoinGroupPendingMember", "c1"))
    assert s["members"] == {1, 2} and s["pending"] == frozenset() and s["nextId"] == 3
    assert s["newMembers"] == {1, 2} and s["awaitingJoin"] == {1, 2}
    s = run(w, act("InitialDelayedJoin"))  # members arrived meanwhile: waits again
    assert (s["now"], s["gstate"], s["newMemberAdded"]) == (1, "PreparingRebalance", False)
    assert s["timers"][0]["kind"] == "InitialJoin" and s["timers"][0]["remaining"] == 1
    s = run(w, act("InitialDelayedJoin"))
    assert (s["now"], s["gstate"], s["generation"]) == (2, "CompletingRebalance", 1)
    assert s["genMembers"] == {1, 2} and s["pendingSync"] == {1, 2}
    assert dict(s["cphase"]) == {C1: "Joined", C2: "Joined"}
    assert s["cleader"][C2] is True and s["cmembers"][C2] == {1, 2} and s["genLeaders"] == {2}
    sync = [t for t in s["timers"] if t["kind"] == "Sync"][0]
    assert (sync["gen"], sync["delay"], sync["deadline"]) == (1, 3, 5)


def test_leader_sync_installs_the_plan_and_stores_it() -> None:
    w = World(K)
    s = run(
        w,
        act("JoinGroupUnknownMember", "c1"),
        act("JoinGroupUnknownMember", "c2"),
        act("InitialDelayedJoin"),
        act("InitialDelayedJoin"),
        act("SyncGroupFollower", "c2"),
    )
    assert s["cphase"][C2] == "SyncWait" and s["awaitingSync"] == {2} and s["plan"] == frozenset()
    s = run(w, act("SyncGroupLeader", "c1"))
    assert s["gstate"] == "Stable" and s["plan"] == {1, 2}
    assert s["cassign"][C1] == {1, 2} and s["cassign"][C2] == {1, 2}
    assert s["cmembers"][C1] == frozenset()  # the list is used up by the SyncGroup
    assert s["store"] == Record(
        {"exists": True, "gen": 1, "leader": 1, "members": frozenset({1, 2}), "plan": frozenset({1, 2})}
    )


def test_store_async_leader_sync_waits_for_the_store_callback() -> None:
    """StoreAsync: the leader's SyncGroup queues its append (writes) and the group stays
    CompletingRebalance; StoreCallback with an error answers the parked syncs with storeGroup's
    translation and rebalances; a write made before an unload is stale afterwards."""
    k = replace(K, store_async=True)
    w = World(k)
    joined = (
        act("JoinGroupUnknownMember", "c1"),
        act("JoinGroupUnknownMember", "c2"),
        act("InitialDelayedJoin"),
        act("InitialDelayedJoin"),
        act("SyncGroupFollower", "c2"),
        act("SyncGroupLeader", "c1"),
    )
    s = run(w, *joined)
    assert s["gstate"] == "CompletingRebalance" and s["awaitingSync"] == {1, 2} and s["plan"] == frozenset()
    assert s["writes"] == (
        Record(
            {
                "kind": "Sync",
                "gen": 1,
                "leader": 1,
                "members": frozenset({1, 2}),
                "plan": frozenset({1, 2}),
                "stale": False,
                "member": 0,
                "old": 0,
                "obj": 0,
                "skip": False,
                "cleader": 0,
                "open": False,
            }
        ),
    )
    assert not_enabled(w, act("StoreCallback")) is None
    res = apply_action(w, Record({**act("StoreCallback"), "append": "REQUEST_TIMED_OUT"}))
    assert res.last_action["resp"] == "REBALANCE_IN_PROGRESS" and res.last_action["gen"] == 1
    s = abstract_state(w)
    assert s["writes"] == () and s["gstate"] == "PreparingRebalance" and s["store"]["exists"] is False
    assert dict(s["cphase"]) == {C1: "Unjoined", C2: "Unjoined"}
    assert not_enabled(w, act("StoreCallback")) == "no group-metadata append in flight"

    w = World(k)
    s = run(w, *joined, act("GroupUnload"))
    assert [x["stale"] for x in s["writes"]] == [True]
    s = run(w, Record({**act("StoreCallback"), "resp": "NONE"}))
    assert s["writes"] == () and s["store"]["gen"] == 1 and s["gstate"] == "Dead"


def test_static_rejoin_in_stable_parks_until_its_append_and_reverts_on_an_error() -> None:
    """updateStaticMemberAndRebalance in Stable with a deferred store: the JoinGroup of the
    restarted static consumer parks under the new id, its append (kind Static) names the new
    and old ids, the MemberMetadata's id now (obj) and whether the join is unanswered (open);
    an append error renames the member back (the new id's timer an orphan) and answers the
    join without a member id."""
    k = replace(K, store_async=True, instances=(("c1",),))
    w = World(k)
    stable = (
        act("JoinGroupUnknownMember", "c1"),
        act("InitialDelayedJoin"),
        act("SyncGroupLeader", "c1"),
        act("StoreCallback"),
        act("ClientCrash", "c1"),
        act("ClientRestart", "c1"),
    )
    s = run(w, *stable)
    assert s["gstate"] == "Stable" and s["members"] == {1} and s["writes"] == ()
    res = apply_action(w, act("JoinGroupUnknownMember", "c1"))
    assert res.last_action["resp"] == "PARKED" and res.last_action["newMember"] == 2
    s = abstract_state(w)
    assert s["members"] == {2} and s["awaitingJoin"] == {2} and s["store"]["members"] == {1}
    (write,) = s["writes"]
    assert write["kind"] == "Static" and write["members"] == {2} and write["plan"] == {2}
    assert (write["member"], write["old"], write["obj"], write["cleader"], write["open"]) == (2, 1, 2, 1, True)
    res = apply_action(w, Record({**act("StoreCallback"), "append": "NOT_ENOUGH_REPLICAS"}))
    assert res.last_action["resp"] == "COORDINATOR_NOT_AVAILABLE"
    s = abstract_state(w)
    assert s["writes"] == () and s["members"] == {1} and s["awaitingJoin"] == set()
    assert s["leader"] == 1 and s["plan"] == {1} and s["store"]["members"] == {1}
    assert dict(s["cphase"])[C1] == "Unjoined" and dict(s["cmember"])[C1] == 0
    assert [(x["member"], x["orphan"]) for x in s["timers"] if x["kind"] == "Heartbeat"] == [(2, True), (1, False)]


def test_loading_window_answers_and_ends_with_a_load_or_an_unload() -> None:
    """LoadBegin puts the group in the loading window (loading, not loaded): a JoinGroup is
    answered COORDINATOR_LOAD_IN_PROGRESS; GroupUnloadDuringLoad ends it without a failover;
    GroupLoad ends it with the stored group."""
    w = World(K)
    s = run(w, act("JoinGroupUnknownMember", "c1"), act("InitialDelayedJoin"), act("GroupUnload"))
    assert (s["loaded"], s["loading"]) == (False, False)
    assert not_enabled(w, act("GroupUnloadDuringLoad")) == "the group is not loading"
    s = run(w, act("LoadBegin"))
    assert (s["loaded"], s["loading"], s["failovers"]) == (False, True, 1)
    assert not_enabled(w, act("LoadBegin")) == "the group is loaded or loading"
    res = apply_action(w, act("JoinGroupKnownMember", "c1"))
    assert res.last_action["resp"] == "COORDINATOR_LOAD_IN_PROGRESS"
    s = run(w, act("GroupUnloadDuringLoad"))
    assert (s["loaded"], s["loading"], s["failovers"]) == (False, False, 1)
    s = run(w, act("LoadBegin"), act("GroupLoad"))
    assert (s["loaded"], s["loading"], s["gstate"]) == (True, False, "Dead")  # never stored


def test_unload_makes_timers_stale_with_the_members_and_flag_of_that_moment() -> None:
    w = World(K)
    s = run(w, act("JoinGroupUnknownMember", "c1"), act("GroupUnload"))
    assert (s["loaded"], s["gstate"], s["failovers"]) == (False, "Dead", 1)
    assert s["cphase"][C1] == "Unjoined"  # NOT_COORDINATOR: rejoin
    assert all(t["stale"] for t in s["timers"])
    initial = [t for t in s["timers"] if t["kind"] == "InitialJoin"][0]
    assert initial["olds"] == {1} and initial["nma"] is False
    s = run(w, act("GroupLoad"))
    assert s["loaded"] is True and s["gstate"] == "Dead"  # never stored: stays absent


def test_time_in_spec_units_and_advance_time() -> None:
    w = World(K)
    run(w, act("JoinGroupUnknownMember", "c1", flag=True))
    s = run(w, act("AdvanceTime", dt=1))
    assert s["now"] == 1 and w.clock.now_ms() == 250
    assert not_enabled(w, act("AdvanceTime", dt=1)) == "the next timer is due before that"
    w.timer.advance_to(w.clock.now_ms() + 1)  # 1 ms: not a whole unit
    with pytest.raises(AbstractionError):
        abstract_state(w)


def test_a_request_the_client_gave_up_on_is_answered_to_nobody() -> None:
    w = World(K)
    s = run(w, act("JoinGroupUnknownMember", "c1"), act("ClientAbandon", "c1"))
    assert (s["cphase"][C1], s["cwait"][C1]) == ("Unjoined", 0)
    s = run(w, act("InitialDelayedJoin"))
    assert s["gstate"] == "CompletingRebalance" and s["members"] == {1}
    assert s["cphase"][C1] == "Unjoined" and s["cmember"][C1] == 0
    assert s["genLeaders"] == {1}  # the response was produced all the same
    assert w.produced[-1].delivered is False


def test_not_enabled_reads_the_client_views() -> None:
    w = World(K)
    assert not_enabled(w, act("SyncGroupLeader", "c1")).startswith("client c1 is Unjoined")
    assert not_enabled(w, act("ClientRestart", "c1")) is not None
    assert not_enabled(w, act("JoinGroupUnknownMember", "c1")) is None
    assert not_enabled(w, act("SessionTimeoutExpiry")) == "no live timer task"
    assert not_enabled(w, act("GroupLoad")) == "the group is loaded"


def test_ids_map_by_first_appearance_and_are_never_reused() -> None:
    ids = IdMap()
    assert [ids.spec(x) for x in ("a", "b", "c", "a")] == [1, 2, 3, 1]
    assert ids.peek("d") is None and ids.spec("d") == 4 and len(ids) == 4
    assert ids.impl(2) == "b" and ids.spec(None) == ids.spec("") == 0


def test_normalize_keeps_now_at_zero_and_generations_at_one() -> None:
    k = SpecConstants(**{**K.to_json(), "clients": ("c1", "c2"), "normalize": True, "max_failovers": 0})
    w = World(k)
    s = run(
        w, act("JoinGroupUnknownMember", "c1"), act("InitialDelayedJoin"), act("JoinGroupKnownMember", "c1", flag=True)
    )
    # c1 is Joined in generation 1, then rejoins with new metadata: generation 2 at once
    assert w.group.generation_id == 2
    assert (s["now"], s["generation"], s["nextId"]) == (0, 1, 2)
    assert s["cgen"][C1] == 1
    assert [t["deadline"] for t in s["timers"]] == sorted(t["deadline"] for t in s["timers"])
    # lastAction as the spec's LA under Normalize: no gen, no response, time moved or not
    la = apply_action(w, act("AdvanceTime", dt=1)).last_action
    assert (la["gen"], la["resp"], la["dt"]) == (-1, "", 1)
    la = apply_action(w, act("Heartbeat", "c1")).last_action
    assert (la["name"], la["member"], la["gen"], la["resp"], la["dt"]) == ("Heartbeat", 1, -1, "", 0)


def test_constants_from_a_cfg() -> None:
    text = (
        "CONSTANTS\n    Clients = {c2, c1}\n    NumIds = 3 \\* ids\n    Session = 2\n"
        "    Rebalance = 3\n    InitialDelay = 1\n    NewMemberTimeout = 3\n"
        "    MaxGroupSize = 2\n    MaxFailovers = 0\n    Normalize = FALSE\n"
        '    Bug = "none"\nINVARIANTS\n    TypeOK\n'
    )
    assert cfg_constants(text)["NumIds"] == 3
    k = SpecConstants.from_cfg_text(text, ms_per_unit=10)
    assert k.clients == ("c1", "c2") and k.max_failovers == 0 and k.ms(k.session) == 20
    assert SpecConstants.from_json(k.to_json()) == k


def test_stale_heartbeat_reaches_the_coordinator_and_leaves_the_rejoining_client_alone() -> None:
    """StaleHeartbeat: the heartbeat a client sent before it dropped its generation for a
    rejoin is handled by the coordinator (the current generation is accepted, an older one is
    ILLEGAL_GENERATION), and the client, rejoining with generation -1, ignores the answer."""
    w = World(K)
    assert not_enabled(w, act("StaleHeartbeat", "c1", True)) == "client c1 is Unjoined with no member id"
    s = run(w, act("JoinGroupUnknownMember", "c1"), act("InitialDelayedJoin"), act("ClientRejoin", "c1"))
    assert (s["gstate"], s["generation"], s["cphase"][C1], s["cgen"][C1]) == ("CompletingRebalance", 1, "Unjoined", -1)
    for cur, answer, gen in ((True, "NONE", 1), (False, "ILLEGAL_GENERATION", 0)):
        res = apply_action(w, act("StaleHeartbeat", "c1", cur))
        assert (res.last_action["resp"], res.last_action["gen"], res.last_action["flag"]) == (answer, gen, cur)
        after = abstract_state(w)
        assert (after["cphase"][C1], after["cgen"][C1], after["cmember"][C1]) == ("Unjoined", -1, s["cmember"][C1])
    assert w.clients["c1"].member  # UNKNOWN_MEMBER_ID would have reset it, were it delivered


def test_offset_commit_is_fenced_by_generation_and_keeps_the_session() -> None:
    """HandleCommitOffsets: a consumer between JoinGroup and SyncGroup is told
    REBALANCE_IN_PROGRESS and rejoins (ConsumerCoordinator's requestRejoin); a Stable one is
    accepted and its session timer restarts (completeAndScheduleNextHeartbeatExpiration); once
    its session has expired it is UNKNOWN_MEMBER_ID and starts over without a member id."""
    w = World(K)
    assert not_enabled(w, act("HandleCommitOffsets", "c1")) == "client c1 is Unjoined with no member id"
    s = run(w, act("JoinGroupUnknownMember", "c1"), act("InitialDelayedJoin"))
    assert (s["gstate"], s["cphase"][C1]) == ("CompletingRebalance", "Joined")
    res = apply_action(w, act("HandleCommitOffsets", "c1"))
    la = res.last_action
    assert (la["resp"], la["member"], la["gen"]) == ("REBALANCE_IN_PROGRESS", 1, 1)
    s = run(w, act("JoinGroupKnownMember", "c1"), act("SyncGroupLeader", "c1"))
    deadline = [t["deadline"] for t in s["timers"] if t["kind"] == "Heartbeat"]
    s = run(w, act("AdvanceTime", dt=1))
    assert (s["gstate"], s["cphase"][C1], len(deadline)) == ("Stable", "Stable", 1)
    res = apply_action(w, act("HandleCommitOffsets", "c1"))
    after = abstract_state(w)
    assert res.last_action["resp"] == "NONE" and after["cphase"][C1] == "Stable"
    assert [t["deadline"] for t in after["timers"] if t["kind"] == "Heartbeat"] == [d + 1 for d in deadline]
    s = run(w, act("SessionTimeoutExpiry"))
    assert s["members"] == frozenset() and s["cphase"][C1] == "Stable"
    res = apply_action(w, act("HandleCommitOffsets", "c1"))
    after = abstract_state(w)
    assert res.last_action["resp"] == "UNKNOWN_MEMBER_ID"  # checked before the generation (now 2)
    assert (after["gstate"], after["generation"]) == ("Empty", 2)
    assert (after["cphase"][C1], after["cmember"][C1], after["cgen"][C1]) == ("Unjoined", 0, -1)
