--------------------- MODULE LogTraceGroupCoordinator -----------------------
(***************************************************************************)
(* Partial-trace validation: can a behaviour of GroupCoordinator have      *)
(* written what a broker log shows of one group?  TraceGroupCoordinator    *)
(* follows a run where every step was recorded; here only what Kafka logs  *)
(* at INFO is known, so every other step is free.  Written per batch by   *)
(* kgc.conformance.pipeline.logs_validate, as module LogTraceData:         *)
(*                                                                         *)
(*   O            per history, its observations in log order, each         *)
(*                [k |-> kind, g |-> generation or -1, n |-> members or -1] *)
(*   PrefixSteps  per history, how many steps that log something may run  *)
(*                before its first observation (an excerpt starts anywhere *)
(*                in the group's life; the fewest the first observation    *)
(*                needs; logs_validate gives a history that starts with a  *)
(*                rebalance of a generation above 0 a second run with two, *)
(*                one consumer); unobserved steps are free there too       *)
(*                                                                         *)
(* What a step logs (Logged) is read off the step: Kafka 3.9 writes        *)
(*   "prepare"     GroupCoordinator.prepareRebalance: "Preparing to        *)
(*                 rebalance group G in state S with old generation N"     *)
(*   "stabilized"  onCompleteJoin: "Stabilized group G generation N (...)  *)
(*                 with K members"                                         *)
(*   "empty"       onCompleteJoin: "Group G with generation N is now empty" *)
(*   "assignment"  doSyncGroup, the leader in CompletingRebalance:         *)
(*                 "Assignment received from leader L for group G for      *)
(*                 generation N"                                           *)
(*   "unloaded"    GroupMetadataManager.removeGroupsForPartition:          *)
(*                 "Unloading group metadata for G with generation N"      *)
(*   "loaded"      GroupMetadataManager.loadGroup: "Loaded member ... in   *)
(*                 group G with generation N" (a group the store held)     *)
(* A step that logs none of these is unobserved and free: the log cannot  *)
(* tell it happened (heartbeats, timers that change no state, client      *)
(* crashes, joins into a rebalance under way).  A step that logs them must *)
(* log exactly the next observations, in order.  Before the first         *)
(* observation (ti = 0) at most PrefixSteps steps may log lines the        *)
(* excerpt does not hold, and so may the first lines of the step that      *)
(* reaches the first observation.  Generations are renumbered from the first one   *)
(* seen: `off` is the log's generation minus the spec's, fixed by the      *)
(* first observation that carries one.                                     *)
(*                                                                         *)
(* One TLC run checks a batch of histories (tr, chosen in the initial      *)
(* state).  The search is finite without a bound after the first           *)
(* observation: LogView folds absolute time and generation numbering as    *)
(* GenTimeFreeView does, and no unobserved step changes the group's state  *)
(* or generation.                                                          *)
(***************************************************************************)
EXTENDS MCGroupCoordinator, LogTraceData

VARIABLES tr, ti, pc, off   \* which history; observations explained; prefix steps; generation offset

Unbound == -1000000

Ev(k, g, n) == [k |-> k, g |-> g, n |-> n]

(* doSyncGroup logs the assignment only for the leader of the group's     *)
(* current generation in CompletingRebalance (after validateSyncGroup).    *)
LeaderAssignment ==
    /\ lastAction'.name = "SyncGroupLeader" /\ loaded /\ gstate = "CompletingRebalance"
    /\ lastAction'.member = leader /\ lastAction'.gen = generation

(* The coordinator lines the step wrote, in order.  A group absent from    *)
(* the cache (Dead while loaded) is created Empty without a line; a        *)
(* generation that moved was completed by onCompleteJoin, and a rebalance  *)
(* that completed in the same request that started it (the last member    *)
(* rejoining) logged its start first.                                     *)
Logged ==
    IF loaded /\ ~loaded' THEN <<Ev("unloaded", generation, -1)>>
    ELSE IF ~loaded /\ loaded'
    THEN IF gstate' = "Dead" THEN <<>> ELSE <<Ev("loaded", generation', -1)>>
    ELSE IF ~loaded' THEN <<>>
    ELSE LET before == IF gstate = "Dead" THEN "Empty" ELSE gstate
             moved == generation' # generation
             started == before # "PreparingRebalance" /\ (gstate' = "PreparingRebalance" \/ moved)
             completed == IF gstate' = "Empty" THEN "empty" ELSE "stabilized"
         IN (IF LeaderAssignment THEN <<Ev("assignment", generation, -1)>> ELSE <<>>)
            \o (IF started THEN <<Ev("prepare", generation, -1)>> ELSE <<>>)
            \o (IF moved THEN <<Ev(completed, generation', Cardinality(members'))>> ELSE <<>>)

Fits(e, o, f) == /\ e.k = o.k
                 /\ o.g < 0 \/ e.g + f = o.g
                 /\ o.n < 0 \/ e.n = o.n

(* The offset after logging E at observations p+1..p+Len(E): the one fixed *)
(* already, or the first generation E's observations carry.              *)
OffAfter(E, p) ==
    IF off # Unbound THEN off
    ELSE LET js == {j \in 1..Len(E) : O[tr][p + j].g >= 0}
         IN IF js = {} THEN Unbound
            ELSE LET j == Min(js) IN O[tr][p + j].g - E[j].g

LogInit ==
    /\ tr \in 1..Len(O)
    /\ ti = 0 /\ pc = 0 /\ off = Unbound
    /\ Init

LogNext ==
    /\ ti < Len(O[tr])
    /\ Next
    /\ tr' = tr
    /\ LET E == Logged IN
         \/ /\ E = <<>>                              \* unobserved
            /\ UNCHANGED <<ti, pc, off>>
         \/ /\ ti = 0 /\ E # <<>> /\ pc < PrefixSteps[tr]   \* logged before the excerpt starts
            /\ pc' = pc + 1 /\ UNCHANGED <<ti, off>>
         \/ \E d \in (IF ti = 0 THEN 0..Len(E) - 1 ELSE {0}) :
              LET T == SubSeq(E, d + 1, Len(E))      \* what the excerpt holds of the step
                  f == OffAfter(T, ti)
              IN /\ Len(T) > 0 /\ ti + Len(T) <= Len(O[tr])
                 /\ \A j \in 1..Len(T) : Fits(T[j], O[tr][ti + j], f)
                 /\ ti' = ti + Len(T) /\ off' = f /\ pc' = 0

(* GenTimeFreeView and the position, with the generation as the log numbers *)
(* it (what later observations compare).                                  *)
LogView == <<tr, ti, pc, IF off = Unbound THEN Unbound ELSE generation + off, GenTimeFreeView>>

(* A line per state reached: how far each history got. *)
LogProgress == PrintT(<<"@kgc", tr, ti>>)
=============================================================================
