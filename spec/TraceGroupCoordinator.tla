------------------------ MODULE TraceGroupCoordinator ------------------------
(***************************************************************************)
(* Trace validation: is a recorded run of kgc's coordinator a behaviour of *)
(* GroupCoordinator? The same shape as etcd-raft's Traceetcdraft.tla and   *)
(* CCF's Traceccfraft.tla: this module is fixed; only the data is written  *)
(* per batch, by kgc.conformance.validate, as module TraceData:            *)
(*                                                                         *)
(*   Acts      per trace, one integer per recorded state: which action     *)
(*             (a \div 128, numbered as ActionCall below), its client      *)
(*             ((a \div 2) % 64, an index into CLs) and its flag (a % 2);  *)
(*             0 for the initial state; -(now + 1) for an AdvanceTime to   *)
(*             `now`, which the spec reaches in unit steps.                *)
(*   CLs       the clients of the batch, as model values                  *)
(*   View      the observed part of a state (the variables and fields the  *)
(*             recording kept), strings and clients as small integers      *)
(*   Diagnosing  TRUE in the second run that explains a failed step: the   *)
(*             last recorded step is taken without requiring its state     *)
(*                                                                         *)
(* and the .cfg constant Obs: every recorded state as TLC's ToString of    *)
(* <<trace, position, View>> (strings in a .cfg are read several times     *)
(* faster than the same data as TLA+ literals, which SANY parses at about  *)
(* 1 us a byte).                                                           *)
(*                                                                         *)
(* One TLC run checks a whole batch: the trace is chosen in the initial    *)
(* state (tr), so JVM and SANY start-up are paid once.                     *)
(***************************************************************************)
EXTENDS GroupCoordinator, TraceData

CONSTANT Obs             \* the recorded states, as strings
VARIABLES tr, ti         \* which trace; how far into it

C_(a) == CLs[(a \div 2) % 64]
F_(a) == a % 2 = 1

(* The spec action an action code names. The numbering is
   kgc.conformance.validate.ACTIONS's order (tests/conformance/test_trace_module.py
   checks the two agree). *)
Do(a) ==
    CASE a < 0 -> AdvanceTime
      [] a \div 128 = 1 -> JoinGroupUnknownMember(C_(a), F_(a))
      [] a \div 128 = 2 -> JoinGroupPendingMember(C_(a))
      [] a \div 128 = 3 -> JoinGroupKnownMember(C_(a), F_(a))
      [] a \div 128 = 4 -> SyncGroupLeader(C_(a))
      [] a \div 128 = 5 -> SyncGroupFollower(C_(a))
      [] a \div 128 = 6 -> Heartbeat(C_(a))
      [] a \div 128 = 7 -> LeaveGroup(C_(a))
      [] a \div 128 = 8 -> ClientCrash(C_(a))
      [] a \div 128 = 9 -> ClientRestart(C_(a))
      [] a \div 128 = 10 -> ClientAbandon(C_(a))
      [] a \div 128 = 11 -> ClientRejoin(C_(a))
      [] a \div 128 = 12 -> NoIdLeft(C_(a))
      [] a \div 128 = 13 -> SessionTimeoutExpiry
      [] a \div 128 = 14 -> NewMemberJoinTimeout
      [] a \div 128 = 15 -> PendingMemberExpiry
      [] a \div 128 = 16 -> RebalanceTimeout
      [] a \div 128 = 17 -> InitialDelayedJoin
      [] a \div 128 = 18 -> DelayedSyncExpiry
      [] a \div 128 = 19 -> StaleTimerExpiry
      [] a \div 128 = 20 -> AdvanceTime
      [] a \div 128 = 21 -> GroupUnload
      [] a \div 128 = 22 -> GroupLoad
      [] a \div 128 = 23 -> StoreCallbackAny
      [] a \div 128 = 24 -> LoadBegin
      [] a \div 128 = 25 -> GroupUnloadDuringLoad
      [] a \div 128 = 26 -> StaleHeartbeat(C_(a), F_(a))
      [] a \div 128 = 27 -> LeaveGroupByInstanceId(C_(a))
      [] a \div 128 = 28 -> HandleCommitOffsets(C_(a))
      [] a \div 128 = 29 -> SyncGroupInconsistentProtocol(C_(a))
      [] OTHER -> FALSE

(* The observed part of the state after the step is the recorded one. *)
Matches(k) == ToString(<<tr, k, View'>>) \in Obs

TraceInit ==
    /\ tr \in 1..Len(Acts)
    /\ ti = 1
    /\ Init
    /\ ToString(<<tr, 1, View>>) \in Obs

(* Each step is the recorded action with its recorded client and flag, and ends
   in the recorded state. A recorded jump of the clock is taken one tick at a
   time (ti stays) until the last tick, which must match. *)
TraceNext ==
    /\ ti < Len(Acts[tr])
    /\ tr' = tr
    /\ LET a == Acts[tr][ti + 1] IN
         IF a < 0 /\ now + 1 < -a - 1
         THEN AdvanceTime /\ ti' = ti
         ELSE /\ Do(a)
              /\ ti' = ti + 1
              /\ \/ Matches(ti + 1)
                 \/ Diagnosing /\ ti + 1 = Len(Acts[tr])

(* What TLC is asked to report. TraceNotFinished is the classic completion check
   (its violation: the whole trace matched); TraceDone prints a line per trace
   that matched to its end, which costs less than TLC's error trace per
   violation under -continue; TraceProgress a line per state reached (where a
   trace got stuck); BeforeStop (diagnosis) every successor of the failed step. *)
TraceNotFinished == ti < Len(Acts[tr])
TraceDone == TraceNotFinished \/ PrintT(<<"@kgc", tr, ti>>)
TraceProgress == PrintT(<<"@kgc", tr, ti>>)
BeforeStop == ti < Len(Acts[tr]) - 1
=============================================================================
