--------------------------- MODULE MCGroupCoordinator -------------------------
(***************************************************************************)
(* Model plumbing for TLC, kept out of GroupCoordinator.tla so that the    *)
(* protocol module reads as the protocol: the bounds of the state space    *)
(* (a CONSTRAINT), the VIEWs that fold states differing only in absolute   *)
(* time or generation numbering, and the symmetry of the clients.  Every   *)
(* model in spec/models/ runs against this module (or an MC<model>.tla    *)
(* that extends the spec the same way).                                    *)
(***************************************************************************)
EXTENDS GroupCoordinator, TLC

CONSTANTS
    MaxGen, MaxTime   \* model bounds, used only by StateBound (a CONSTRAINT)

StateBound == generation <= MaxGen /\ now <= MaxTime

(* A VIEW for safety models: states that differ only in the absolute time  *)
(* (deadlines are taken relative to now) or in lastAction are one state.   *)
(* Everything the spec does depends on deadline - now only, and no         *)
(* invariant reads lastAction, so checking is unchanged; traces still show *)
(* real states.  Not for liveness checking.                                *)
TimeFreeView ==
    <<[i \in DOMAIN timers |-> [timers[i] EXCEPT !.deadline = @ - now]],
      loaded, gstate, generation, leader, members, pending, awaitingJoin, awaitingSync,
      newMembers, pendingSync, plan, newMemberAdded, mtimeouts, nextId, store, failovers,
      cphase, cmember, cgen, cleader, cmembers, cassign, cwait, genLeaders, genMembers, leaderLog,
      writes, staticMembers, minstance, storeStatic, loading, protocol, mprotocols, ackLog>>

(* TimeFreeView, and generations taken relative to the group's: the protocol *)
(* only compares generations for equality (and tests generation = 0), so  *)
(* states one rebalance apart in number but alike otherwise are one.      *)
(* It drops leaderLog and ackLog too: check                                *)
(* GenerationLeaderUniqueAcrossFailovers with TimeFreeView; TLC checks    *)
(* AcknowledgedGenerationLeaderUnique (an action property) on every       *)
(* transition from the state the VIEW kept, so what it reports is real    *)
(* (models/bug_sync_acknowledged_not_stored.cfg uses TimeFreeView).       *)
(* Generations older than any the group can have again are one value: the *)
(* spec compares a generation with the group's only for equality, and the *)
(* group's generation only grows, except that a reload falls back to the  *)
(* stored generation (GroupLoad) or, with nothing stored, to a new group  *)
(* whose members are all new ids (so an old client generation meets        *)
(* UNKNOWN_MEMBER_ID before it is compared).  With this the VIEW folds     *)
(* every generation number, and no bound on generations is needed          *)
(* (models set MaxGen far beyond reach; spec/models/README.md).            *)
GenFloor == LET sg == IF store.exists /\ store.gen < generation THEN store.gen ELSE generation
                wg == {writes[i].gen : i \in DOMAIN writes} \ {NoGen}
            IN IF \E w \in wg : w < sg THEN Min(wg) ELSE sg
RelGen(g) == IF g = NoGen THEN NoGen - 1000 ELSE IF g < GenFloor THEN NoGen - 999 ELSE g - generation
GenTimeFreeView ==
    <<[i \in DOMAIN timers |-> [timers[i] EXCEPT !.deadline = @ - now,
                                               !.gen = RelGen(@)]],
      loaded, gstate, generation = 0, leader, members, pending, awaitingJoin, awaitingSync,
      newMembers, pendingSync, plan, newMemberAdded, mtimeouts, nextId,
      [store EXCEPT !.gen = RelGen(@)], failovers,
      cphase, cmember, [c \in Clients |-> RelGen(cgen[c])], cleader, cmembers, cassign, cwait,
      genLeaders, genMembers,
      [i \in DOMAIN writes |-> [writes[i] EXCEPT !.gen = RelGen(@)]],
      staticMembers, minstance, storeStatic, loading, protocol, mprotocols>>

(* GenTimeFreeView without the timers that can no longer do anything: a   *)
(* stale DelayedHeartbeat, pending-member expiration or DelayedSync of an   *)
(* unloaded group fires on its Dead GroupMetadata without effect           *)
(* (StaleTimerExpiry changes only the clock), and a checkAndComplete of its *)
(* key only removes it.  Before it fires it lets the clock move to its      *)
(* deadline, which changes no relative deadline the view keeps; every other *)
(* step acts alike with and without it, and no invariant reads it          *)
(* (OneSessionTimerPerMember and EmptyIffNoMembers skip stale timers;      *)
(* TimersOrdered holds for any subsequence).  A stale DelayedJoin or        *)
(* InitialDelayedJoin still acts (its onCompleteJoin checks the old        *)
(* members' heartbeat keys) and stays.  Used by the store models, where    *)
(* two failovers leave many (spec/models/README.md).                       *)
NoOpStale(t) == t.stale /\ t.kind \in {"Heartbeat", "Pending", "Sync"}
ActingTimers == SelectSeq(timers, LAMBDA t : ~NoOpStale(t))
ActingTimersView ==
    [GenTimeFreeView EXCEPT ![1] = [i \in DOMAIN ActingTimers |->
                                     [ActingTimers[i] EXCEPT !.deadline = @ - now,
                                                              !.gen = RelGen(@)]]]

(* ActingTimersView, and once the last failover's load is done the store  *)
(* is forgotten: GroupLoad, the only step that reads `store`, cannot come   *)
(* again (no unload is left), so the record, the stored static mapping and  *)
(* what a stale append would write are history; generations older than the *)
(* group's are one value (it only grows from here).  For models that check  *)
(* no property reading the store (MemberIdSurvivesReload does): `store`.    *)
FinalLoad == failovers = MaxFailovers /\ loaded
FinalRelGen(g) == IF g = NoGen THEN NoGen - 1000 ELSE IF g < generation THEN NoGen - 999 ELSE g - generation
ForgetStore(w) == IF w.stale THEN [kind |-> w.kind, stale |-> TRUE]
                  ELSE [kind |-> w.kind, stale |-> FALSE, gen |-> FinalRelGen(w.gen), plan |-> w.plan]
StoreForgottenView ==
    IF ~FinalLoad THEN ActingTimersView
    ELSE <<"final",
           [i \in DOMAIN ActingTimers |-> [ActingTimers[i] EXCEPT !.deadline = @ - now,
                                                                   !.gen = FinalRelGen(@)]],
           gstate, generation = 0, leader, members, pending, awaitingJoin, awaitingSync,
           newMembers, pendingSync, plan, newMemberAdded, mtimeouts, nextId,
           cphase, cmember, [c \in Clients |-> FinalRelGen(cgen[c])], cleader, cmembers, cassign, cwait,
           genLeaders, genMembers, [i \in DOMAIN writes |-> ForgetStore(writes[i])],
           staticMembers, minstance, loading, protocol, mprotocols>>

(* ActingTimersView, and once the last failover's load is done every      *)
(* generation older than the group's is one value, the stored record's and *)
(* the appends' included (StoreForgottenView keeps the record for the      *)
(* properties that read it).  No reload is left, so the generation only    *)
(* grows from here and an older one never equals it again: a client's      *)
(* (Heartbeat, SyncGroup, OffsetCommit: validateCurrentMember compares it   *)
(* with generationId), a DelayedSync's (SyncDone), an append's (doSyncGroup *)
(* callback: "the same generation"), the stored record's                  *)
(* (MemberIdSurvivesReload: store.gen = generation; GroupLoad cannot come). *)
(* A generation at or above the group's keeps its offset: a stale append's *)
(* callback stores its generation, which the group can still reach.  For   *)
(* `static_store`, whose MemberIdSurvivesReload reads the record.           *)
FinalGenView ==
    IF ~FinalLoad THEN ActingTimersView
    ELSE <<"final",
           [i \in DOMAIN ActingTimers |-> [ActingTimers[i] EXCEPT !.deadline = @ - now,
                                                                   !.gen = FinalRelGen(@)]],
           gstate, generation = 0, leader, members, pending, awaitingJoin, awaitingSync,
           newMembers, pendingSync, plan, newMemberAdded, mtimeouts, nextId,
           [store EXCEPT !.gen = FinalRelGen(@)],
           cphase, cmember, [c \in Clients |-> FinalRelGen(cgen[c])], cleader, cmembers, cassign, cwait,
           genLeaders, genMembers, [i \in DOMAIN writes |-> [writes[i] EXCEPT !.gen = FinalRelGen(@)]],
           staticMembers, minstance, storeStatic, loading, protocol, mprotocols>>

ClientSymmetry == Permutations(Clients)

(* ---- group store ---- *)
(* A bound on the appends in flight (store models): each needs a leader's  *)
(* SyncGroup or an emptied group, and a write that is never acknowledged   *)
(* adds nothing a shorter queue does not show.                            *)
MaxWrites == 2     \* store.cfg and static_store.cfg set 1; store_deep.cfg keeps 2
StoreBound == Len(writes) <= MaxWrites

(* A bound on the generations formed since the oldest one the group can    *)
(* fall back to (GenFloor: the stored generation, or an append's in        *)
(* flight), until the last failover's load.  Without it the store models   *)
(* never end: the views keep a generation in [GenFloor, generation] exactly *)
(* (a reload falls back to GenFloor and the group counts up from there, so *)
(* a client holding a generation that far above can be matched again:     *)
(* finding_generation_reuse), and the group can rebalance without ever     *)
(* storing (an emptied group's append unacknowledged while members join   *)
(* and leave, leaders failing their SyncGroup, every append failing), so   *)
(* `generation - GenFloor` grows by one per rebalance.  That is a          *)
(* disturbance, a run of generations none of which is written to the log,  *)
(* and MaxUnstored bounds it; after the last load no reload can fall back, *)
(* the views fold every older generation (StoreForgottenView, FinalGenView) *)
(* and the bound is off.  What it loses: a reload that falls back more      *)
(* than MaxUnstored generations (spec/models/README.md).                    *)
MaxUnstored == 1000000   \* store.cfg and static_store.cfg set 3
UnstoredBound == ~loaded \/ FinalLoad \/ generation - GenFloor <= MaxUnstored

(* Two premises on a static rejoin's append in flight (an ACTION_CONSTRAINT; *)
(* each can be switched off, and the finding models do, to show what Kafka *)
(* 3.x does without it):                                                   *)
(*  - AppendBeatsSession: the append is acknowledged (or times out,         *)
(*    offsets.commit.timeout.ms, 5 s by default) before a session timeout   *)
(*    (group.min.session.timeout.ms, 6 s by default) of the member it holds *)
(*    fires.  Without it Kafka loses that member's session timer            *)
(*    (finding_static_rejoin_loses_session_timer): it fires without effect  *)
(*    while the JoinGroup is parked, and the callback answers the join      *)
(*    without scheduling another, so a member whose consumer then dies is   *)
(*    never removed.                                                       *)
(*  - AppendBeatsRebalance: no new generation forms before it is            *)
(*    acknowledged.  Without it a failed append reverts the member id       *)
(*    inside the next generation (finding_static_revert_after_rebalance):   *)
(*    the leader assigns to the new id, the group holds the old one, which  *)
(*    gets no assignment (AssignmentMatchesGenerationMembers).              *)
(*  - AppendBeatsRejoin: the instance does not rejoin again before it is   *)
(*    acknowledged.  Without it the first append's callback answers the     *)
(*    second JoinGroup (maybeInvokeJoinCallback on the MemberMetadata,      *)
(*    renamed since) with the first, replaced member id; after a reload     *)
(*    from the first append, the second one's late acknowledgement stores   *)
(*    the other id (finding_static_rejoin_answered_with_replaced_id:        *)
(*    MemberIdSurvivesReload).                                             *)
AppendBeatsSession == TRUE
AppendBeatsRebalance == TRUE
AppendBeatsRejoin == TRUE
StaticAppendInFlight(m) ==
    \E i \in DOMAIN writes : writes[i].kind = "Static" /\ ~writes[i].stale /\ writes[i].obj = m
StaticAppendPrompt ==
    /\ AppendBeatsSession =>
         ~(lastAction'.name = "SessionTimeoutExpiry" /\ StaticAppendInFlight(Head(timers).member))
    /\ AppendBeatsRebalance =>
         ~(generation' # generation /\ loaded' /\ \E i \in DOMAIN writes : writes[i].kind = "Static" /\ ~writes[i].stale)
    /\ AppendBeatsRejoin =>
         ~(lastAction'.name = "JoinGroupUnknownMember" /\ lastAction'.client \in UNION Instances
           /\ \E I \in Instances : lastAction'.client \in I /\ StaticAppendInFlight(staticMembers[I]))

(* With static members: clients are interchangeable only within one        *)
(* instance id, and among the dynamic clients.                             *)
InstanceSymmetry ==
    UNION {Permutations(I) : I \in Instances} \cup Permutations(Clients \ UNION Instances)

(* Clients with timeouts of their own (timeouts.cfg): one client, SlowClient, *)
(* sends SlowSession and SlowRebalance, the others Session and Rebalance.  A  *)
(* model sets the three and overrides SessionOf <- MCSessionOf, RebalanceOf   *)
(* <- MCRebalanceOf (GroupCoordinator.tla's per-client timeouts).             *)
SlowClient == NoClient
SlowSession == Session
SlowRebalance == Rebalance
MCSessionOf(c) == IF c = SlowClient THEN SlowSession ELSE Session
MCRebalanceOf(c) == IF c = SlowClient THEN SlowRebalance ELSE Rebalance

(* Clients with protocol lists of their own (protocols.cfg): RoundRobinClient *)
(* prefers roundrobin and supports range, StickyClient supports sticky     *)
(* only, every other client prefers cooperative-sticky and supports range  *)
(* and roundrobin.  StickyClient has no protocol in common with the others *)
(* (INCONSISTENT_GROUP_PROTOCOL); a group of RoundRobinClient and another  *)
(* client has candidates range and roundrobin and ties them, one vote each *)
(* (the least name, range, wins); the other client's first choice is no   *)
(* candidate.  A model sets the two clients and overrides ProtocolsOf <-   *)
(* MCProtocolsOf and ProtocolOrder <- MCProtocolOrder.                     *)
RoundRobinClient == NoClient
StickyClient == NoClient
MCProtocolsOf(c) ==
    CASE c = RoundRobinClient -> <<"roundrobin", "range">>
      [] c = StickyClient -> <<"sticky">>
      [] OTHER -> <<"cooperative-sticky", "range", "roundrobin">>
MCProtocolOrder == <<"cooperative-sticky", "range", "roundrobin", "sticky">>

=============================================================================
