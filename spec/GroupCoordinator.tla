--------------------------- MODULE GroupCoordinator ---------------------------
(***************************************************************************)
(* Kafka 3.7-3.9's classic group coordinator (the Scala one, in            *)
(* core/src/main/scala/kafka/coordinator/group/) and its dynamic-member    *)
(* clients, for ONE group.  Static membership (group.instance.id) is in   *)
(* its own section below (model parameters Instances, StaticSkipAssignment, *)
(* both off by default).  Protocol selection is in its own section        *)
(* (ProtocolsOf: each client's protocol names in preference order; one      *)
(* protocol for all unless a model overrides it).                          *)
(* OffsetCommit is modelled for its fencing only (HandleCommitOffsets: no  *)
(* offsets are kept, the step's answer is in lastAction).                  *)
(* Each client sends its own session and rebalance timeouts (SessionOf,    *)
(* RebalanceOf; one Session and Rebalance for all unless a model          *)
(* overrides them), and a member keeps those of its last JoinGroup.        *)
(*                                                                         *)
(* Granularity.  One spec step is one request handled by the coordinator   *)
(* (the client sending it is part of the step), one timer firing, or one   *)
(* local client event (crash, restart, giving up on a request, deciding    *)
(* to rejoin).  Kafka completes delayed operations synchronously inside    *)
(* the request or expiry that satisfies them (checkAndComplete,            *)
(* tryCompleteElseWatch), so DelayedJoin completion (onCompleteJoin),      *)
(* DelayedSync completion and heartbeat completion are operators used      *)
(* inside those steps, never steps of their own.  A step is written as     *)
(* sequential code over a record `s` holding every variable (Cur), and     *)
(* committed at its end (Commit).                                          *)
(*                                                                         *)
(* Requests and responses.  A request is handled when it is sent.  A       *)
(* JoinGroup or SyncGroup may be parked (awaitingJoin / awaitingSync, the  *)
(* awaitingJoinCallback / awaitingSyncCallback of MemberMetadata); its     *)
(* client then waits (cphase JoinWait / SyncWait, cwait = the member id    *)
(* the request is parked under).  A response is delivered at the moment    *)
(* the coordinator produces it (as the scenario contract says) and the     *)
(* client's reaction, which is local, is folded into the delivery; a       *)
(* response to a client that crashed or gave up (ClientAbandon) is lost.   *)
(*                                                                         *)
(* Member ids.  Ids are 1..NumIds, handed out in order (nextId), so an     *)
(* implementation trace maps onto spec ids by order of first appearance.   *)
(* NoMember (0) is the empty member id "".  When the ids run out, a client *)
(* that needs one gives up (NoIdLeft, a model bound).                      *)
(*                                                                         *)
(* Timers.  `now` is a discrete clock and `timers` the live timer tasks of *)
(* the purgatories, as a sequence ordered by (deadline, creation order):   *)
(* a new timer goes after every timer with a deadline <= its own.  Only    *)
(* the head fires; firing sets now to its deadline first, so a timer it    *)
(* creates counts from that deadline.  AdvanceTime moves now by 1 while    *)
(* now + 1 < head deadline.  Cancelling (a completed delayed operation)    *)
(* removes the timer.  Durations are small integers (Session, Rebalance,   *)
(* InitialDelay, NewMemberTimeout); with 1 spec unit = K ms, a spec timer  *)
(* step is the implementation's SystemTimer.fire_next() and AdvanceTime is *)
(* advance_to(clock + K).  When several timers are created in one step for *)
(* several members (onCompleteJoin, propagateAssignment, onGroupLoaded)    *)
(* they are created in ascending member id, i.e. order of first            *)
(* appearance; Kafka iterates a HashMap there.  AdvanceTime needs a live   *)
(* timer: with none, time passing is unobservable, so an implementation    *)
(* clock may run ahead of now by an offset while no timer is live.         *)
(* lastAction.dt says how far a step moved the clock.                     *)
(*                                                                         *)
(* Checking (model plumbing in MCGroupCoordinator.tla).  Safety models    *)
(* keep the absolute clock (as replay needs) and fold it with a VIEW       *)
(* (TimeFreeView, GenTimeFreeView: deadlines relative to now, generations *)
(* relative to the group's, lastAction dropped).                          *)
(* TLC's liveness checking cannot use a VIEW, so liveness models set       *)
(* Normalize: the clock stays 0 with deadlines relative to it, generations *)
(* older than the current one are all written 0, and lastAction keeps     *)
(* only what the liveness formulas read; no unload/load then.  FairSpec   *)
(* assumes only that time is fair and not Zeno; client fairness and        *)
(* promptness are premises of EventuallyStable.                           *)
(*                                                                         *)
(* Timer kinds (timers[i].kind) and the Kafka operation behind each:       *)
(*   "Heartbeat"   DelayedHeartbeat(isPending = false), dur "session"      *)
(*                 (sessionTimeoutMs) or "newMember" (NewMemberJoinTimeoutMs) *)
(*   "Pending"     DelayedHeartbeat(isPending = true) of a pending member  *)
(*   "Join"        DelayedJoin (rebalance timeout)                         *)
(*   "InitialJoin" InitialDelayedJoin (delay, remaining)                   *)
(*   "Sync"        DelayedSync (generation, rebalance timeout)             *)
(* A timer is `stale` when its group was unloaded: Kafka runs it against   *)
(* the Dead GroupMetadata object; it is `orphan` when Kafka removed its    *)
(* member without completing it (LeaveGroup of a pending member, a member  *)
(* shed with GROUP_MAX_SIZE_REACHED): it fires without effect.             *)
(*                                                                         *)
(* Group existence.  gstate = "Dead" with loaded = TRUE also stands for    *)
(* "no group in the coordinator's cache" (never created, or loaded from a  *)
(* store that never held it), as the scenario contract reports it.         *)
(*                                                                         *)
(* lastAction records each step's name and parameters, because TLC 2.15   *)
(* prints no action parameters in traces; conformance replay reads it.     *)
(*                                                                         *)
(* Bug switches: Bug = "none" is Kafka; every other value seeds one defect *)
(* (see the model README); each is checked where the code differs.         *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC

CONSTANTS
    Clients,          \* the consumer processes (model values)
    NoClient,         \* a model value: "no client"
    NumIds,           \* member ids 1..NumIds
    Session,          \* session.timeout.ms, in spec units
    Rebalance,        \* rebalance timeout (max.poll.interval.ms), in spec units
    InitialDelay,     \* group.initial.rebalance.delay.ms, in spec units
    NewMemberTimeout, \* GroupCoordinator.NewMemberJoinTimeoutMs, in spec units
    MaxGroupSize,     \* group.max.size
    JoinFlavours,     \* requireKnownMemberId values clients use (subset of BOOLEAN)
    ClientFaults,     \* subset of {"crash", "abandon", "leave", "rejoin", "change", "resync",
                      \*   "early-rejoin", "stale-heartbeat", "admin-leave", "bad-protocol"}
    MaxFailovers,     \* how many times the group may be unloaded (0: never)
    Normalize,        \* relative clock and generations (liveness models)
    Bug               \* "none", or the name of one seeded defect

NoMember == 0
MemberIds == 1..NumIds
NoGen == -1
GroupStates == {"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}
Phases == {"Down", "Unjoined", "JoinWait", "Joined", "SyncWait", "Stable"}
TimerKinds == {"Heartbeat", "Pending", "Join", "InitialJoin", "Sync"}

Min(S) == CHOOSE x \in S : \A y \in S : x <= y
Max0(x) == IF x < 0 THEN 0 ELSE x
Smaller(a, b) == IF a < b THEN a ELSE b

(* Static membership parameters.  Definitions, not CONSTANTS, so that      *)
(* existing models need not name them; a model overrides them in its .cfg  *)
(* (TLC replaces a definition given a value there), e.g. models/static.cfg. *)
(* Instances: the group.instance.id values, each written as the set of the *)
(* clients configured with it (two clients sharing one are a restarted     *)
(* consumer and its zombie, the case FENCED_INSTANCE_ID exists for); a     *)
(* client in none is dynamic.  StaticSkipAssignment: the                   *)
(* supportsSkippingAssignment values (JoinGroup v9+, KIP-814) static       *)
(* clients send; a static client's JoinGroupUnknownMember flag is it.      *)
Instances == {}
StaticSkipAssignment == {FALSE}
NoInstance == {}
InstanceOf(c) == IF \E I \in Instances : c \in I THEN CHOOSE I \in Instances : c \in I ELSE NoInstance

(* ---- per-member timeouts ------------------------------------------------ *)
(* A consumer sends its session.timeout.ms and max.poll.interval.ms in     *)
(* every JoinGroup (JoinGroupRequest sessionTimeoutMs, rebalanceTimeoutMs); *)
(* the coordinator keeps them per member (MemberMetadata, set by           *)
(* addMemberAndRebalance and GroupMetadata.updateMember) and answers       *)
(* INVALID_SESSION_TIMEOUT outside group.min/max.session.timeout.ms.       *)
(* Definitions, not CONSTANTS: a model that gives clients their own        *)
(* timeouts overrides them in its .cfg (SessionOf <- ..., or               *)
(* MinSession = n), the others keep one Session and Rebalance for all.    *)
SessionOf(c) == Session
RebalanceOf(c) == Rebalance
MinSession == 0                 \* group.min.session.timeout.ms
MaxSession == 1000000           \* group.max.session.timeout.ms
DefaultTimeouts == <<Session, Rebalance>>
TimeoutsOf(c) == <<SessionOf(c), RebalanceOf(c)>>

(* ---- protocol selection: the parameters --------------------------------- *)
(* A consumer sends the names of the assignors it supports, most preferred *)
(* first (JoinGroupRequest protocols; partition.assignment.strategy), with  *)
(* protocol type "consumer".  ProtocolsOf(c) is client c's list; it never   *)
(* changes (a change of metadata bytes is the "change" fault's chg flag).  *)
(* Definitions, not CONSTANTS: a model whose clients differ overrides      *)
(* ProtocolsOf (models/protocols.cfg), the others keep one protocol for    *)
(* all, so selection is trivial there.  ProtocolOrder lists every name a   *)
(* model uses in ascending string order: Kafka breaks a tie of the vote by *)
(* HashMap order (selectProtocol's groupBy ... maxBy), which is            *)
(* unspecified; the spec, like the implementation, takes the least name.   *)
DefaultProtocol == "range"
ProtocolsOf(c) == <<DefaultProtocol>>
ProtocolOrder == <<DefaultProtocol>>
NoProtocol == ""                      \* GroupMetadata.protocolName = None
DefaultProtocols == <<DefaultProtocol>>
Names(ps) == {ps[i] : i \in DOMAIN ps}

VARIABLES
    now,            \* the virtual clock
    timers,         \* live timer tasks, ordered by (deadline, creation)
    loaded,         \* the coordinator owns the group's __consumer_offsets partition
    gstate,         \* GroupMetadata.state
    generation,     \* GroupMetadata.generationId
    leader,         \* GroupMetadata.leaderId (NoMember = None)
    members,        \* GroupMetadata.members (keys)
    pending,        \* GroupMetadata.pendingMembers
    awaitingJoin,   \* members with a parked JoinGroup (awaitingJoinCallback)
    awaitingSync,   \* members with a parked SyncGroup (awaitingSyncCallback)
    newMembers,     \* MemberMetadata.isNew
    pendingSync,    \* GroupMetadata.pendingSyncMembers
    plan,           \* the assignment installed for the current generation, as the
                    \*   member set the leader assigned over; {} from prepareRebalance
                    \*   until the leader's SyncGroup (Kafka keeps the old per-member
                    \*   assignments then, but nothing reads them before they are reset
                    \*   or overwritten)
    newMemberAdded, \* GroupMetadata.newMemberAdded
    mtimeouts,      \* per member id: <<sessionTimeoutMs, rebalanceTimeoutMs>> of its
                    \*   MemberMetadata (its last JoinGroup's); kept after it leaves
    nextId,         \* next member id to hand out
    store,          \* the group as last written to __consumer_offsets (storeGroup)
    failovers,      \* unloads so far
    cphase,         \* client phase
    cmember,        \* client's member id
    cgen,           \* client's generation
    cleader,        \* client believes it is the leader
    cmembers,       \* member list the client got as leader
    cassign,        \* assignment the client received
    cwait,          \* member id the client's parked request waits under
    genLeaders,     \* history: members named leader in a successful JoinGroup
                    \*   response for the current generation (this incarnation)
    genMembers,     \* history: the members the current generation was formed with
                    \*   ({} while a rebalance is under way)
    leaderLog,      \* history across failovers (kept only when MaxFailovers > 0):
                    \*   <<generation, member>> for every successful JoinGroup
                    \*   response naming its own member leader
    lastAction,     \* the last step and its parameters
    writes,         \* group store: the group-metadata appends not yet acknowledged, oldest
                    \*   first (<<>> unless StoreAsync)
    staticMembers,  \* GroupMetadata.staticMembers: instance id -> member id (NoMember: none)
    minstance,      \* MemberMetadata.groupInstanceId of every member id handed out
                    \*   (NoInstance: dynamic); fixed when the id is handed out
    storeStatic,    \* the staticMembers part of `store` (GroupMetadataValue's group_instance_id)
    loading,        \* loading window: the group's partition is being loaded here
                    \*   (GroupMetadataManager.loadingPartitions; implies ~loaded)
    protocol,       \* GroupMetadata.protocolName (NoProtocol: None), chosen by the vote
    mprotocols,     \* per member id: MemberMetadata.supportedProtocols' names, in preference
                    \*   order (its last JoinGroup's); kept after it leaves
    ackLog          \* history across failovers (kept only when MaxFailovers > 0):
                    \*   <<generation, leader>> of every generation whose leader's SyncGroup
                    \*   was answered as stored: the append acknowledged to the incarnation
                    \*   that made it (CompletingRebalance -> Stable)

vars == <<now, timers, loaded, gstate, generation, leader, members, pending,
          awaitingJoin, awaitingSync, newMembers, pendingSync, plan, newMemberAdded,
          mtimeouts, nextId, store, failovers, cphase, cmember, cgen, cleader, cmembers,
          cassign, cwait, genLeaders, genMembers, leaderLog, lastAction, writes,
          staticMembers, minstance, storeStatic, loading, protocol, mprotocols, ackLog>>

NoStore == [exists |-> FALSE, gen |-> 0, leader |-> NoMember, members |-> {}, plan |-> {}]

-----------------------------------------------------------------------------
(* The state as a record, and committing a record as the next state.       *)
(* Fields after `genMembers` are per-step scratch: ok (the step's          *)
(* nondeterministic choices are valid), nlNeed / jlNeed (the candidates    *)
(* for a leader choice the step had to make), resp, newId, dt (for         *)
(* lastAction), jt and jp (the timeouts and protocols of the JoinGroup     *)
(* being handled).                                                         *)

Cur == [now |-> now, timers |-> timers, loaded |-> loaded, gstate |-> gstate,
        generation |-> generation, leader |-> leader, members |-> members,
        pending |-> pending, awaitingJoin |-> awaitingJoin, awaitingSync |-> awaitingSync,
        newMembers |-> newMembers, pendingSync |-> pendingSync, plan |-> plan,
        newMemberAdded |-> newMemberAdded, mtimeouts |-> mtimeouts, nextId |-> nextId, store |-> store,
        failovers |-> failovers, cphase |-> cphase, cmember |-> cmember, cgen |-> cgen,
        cleader |-> cleader, cmembers |-> cmembers, cassign |-> cassign, cwait |-> cwait,
        genLeaders |-> genLeaders, genMembers |-> genMembers, leaderLog |-> leaderLog,
        writes |-> writes,
        staticMembers |-> staticMembers, minstance |-> minstance, storeStatic |-> storeStatic,
        loading |-> loading, protocol |-> protocol, mprotocols |-> mprotocols, ackLog |-> ackLog,
        ok |-> TRUE, nlNeed |-> {}, jlNeed |-> {}, resp |-> "NONE", newId |-> NoMember, dt |-> 0,
        jt |-> DefaultTimeouts, jp |-> DefaultProtocols]

Commit(s, la) ==
    /\ now' = s.now /\ timers' = s.timers /\ loaded' = s.loaded /\ gstate' = s.gstate
    /\ generation' = s.generation /\ leader' = s.leader /\ members' = s.members
    /\ pending' = s.pending /\ awaitingJoin' = s.awaitingJoin /\ awaitingSync' = s.awaitingSync
    /\ newMembers' = s.newMembers /\ pendingSync' = s.pendingSync /\ plan' = s.plan
    /\ newMemberAdded' = s.newMemberAdded /\ mtimeouts' = s.mtimeouts /\ nextId' = s.nextId
    /\ store' = s.store
    /\ failovers' = s.failovers /\ cphase' = s.cphase /\ cmember' = s.cmember
    /\ cgen' = s.cgen /\ cleader' = s.cleader /\ cmembers' = s.cmembers
    /\ cassign' = s.cassign /\ cwait' = s.cwait /\ genLeaders' = s.genLeaders
    /\ genMembers' = s.genMembers /\ leaderLog' = s.leaderLog /\ lastAction' = la
    /\ writes' = s.writes
    /\ staticMembers' = s.staticMembers /\ minstance' = s.minstance /\ storeStatic' = s.storeStatic
    /\ loading' = s.loading /\ protocol' = s.protocol /\ mprotocols' = s.mprotocols
    /\ ackLog' = s.ackLog

(* lastAction fields: name (the action), client (NoClient for timer and  *)
(* coordinator steps), member (the request's member id, NoMember for "",   *)
(* or the firing timer's member), gen (the request's generation, or a     *)
(* DelayedSync's), flag (requireKnownMemberId of an unknown JoinGroup;    *)
(* changed metadata of a known one), newMember (the id handed out in this *)
(* step), resp (the error answered at once, "PARKED" if the request was   *)
(* parked), dt (how far the clock moved).  With Normalize (liveness       *)
(* models, not replayed) it keeps only what the liveness formulas read,   *)
(* so it splits fewer states.                                             *)
LA(name, c, m, g, flag, s) ==
    IF Normalize
    THEN [name |-> name, client |-> c, member |-> m, gen |-> NoGen, flag |-> flag,
          newMember |-> s.newId, resp |-> "", dt |-> IF s.dt > 0 THEN 1 ELSE 0]
    ELSE [name |-> name, client |-> c, member |-> m, gen |-> g, flag |-> flag,
          newMember |-> s.newId, resp |-> s.resp, dt |-> s.dt]

(* Kafka picks a new leader by HashMap order (GroupMetadata.remove: the     *)
(* first remaining member; maybeElectNewJoinedLeader: the first member      *)
(* awaiting join), which is unspecified: the spec lets any candidate be     *)
(* chosen.  H(nl, jl) computes a step for a choice nl (leader after a       *)
(* removal) and jl (leader elected by onCompleteJoin); a run with NoMember  *)
(* reports which choices the step needs (nlNeed, jlNeed).                   *)
RunWithChoices(H(_, _), L(_)) ==
    LET p == H(NoMember, NoMember) IN
    IF p.nlNeed = {} /\ p.jlNeed = {}
    THEN p.ok /\ Commit(p, L(p))
    ELSE \E nl \in (IF p.nlNeed = {} THEN {NoMember} ELSE p.nlNeed) :
           LET q == H(nl, NoMember) IN
           IF q.jlNeed = {}
           THEN q.ok /\ Commit(q, L(q))
           ELSE \E jl \in q.jlNeed : LET r == H(nl, jl) IN r.ok /\ Commit(r, L(r))

-----------------------------------------------------------------------------
(* Timers                                                                  *)

Tmr(kind, m, dl, dur, g, d, r) ==
    [kind |-> kind, member |-> m, deadline |-> dl, dur |-> dur, gen |-> g,
     delay |-> d, remaining |-> r, stale |-> FALSE, orphan |-> FALSE,
     olds |-> {}, nma |-> FALSE]

(* SystemTimer.add: after every timer due no later (ties in creation order) *)
Insert(q, t) ==
    LET k == IF Bug = "timer_inserted_first" THEN 0
             ELSE Cardinality({i \in DOMAIN q : q[i].deadline <= t.deadline})
    IN SubSeq(q, 1, k) \o <<t>> \o SubSeq(q, k + 1, Len(q))

AddTimer(s, t) == [s EXCEPT !.timers = Insert(@, t)]

(* Move the clock by d: absolute, or (Normalize) deadlines shift instead.  *)
Advance(s, d) ==
    IF Normalize
    THEN [s EXCEPT !.timers = [i \in DOMAIN s.timers |->
                                 [s.timers[i] EXCEPT !.deadline = @ - d]], !.dt = d]
    ELSE [s EXCEPT !.now = @ + d, !.dt = d]

(* Take the head timer off and set the clock to its deadline.              *)
FireHead(s) ==
    LET t == Head(s.timers)
        s1 == Advance(s, t.deadline - s.now)
    IN [s1 EXCEPT !.timers = Tail(@)]

HeadIs(kind) == timers # <<>> /\ Head(timers).kind = kind /\ ~Head(timers).stale

(* Live timers of member m stop being cancelled by anything but firing.    *)
OrphanTimers(s, m) ==
    [s EXCEPT !.timers = [i \in DOMAIN s.timers |->
        IF s.timers[i].member = m /\ ~s.timers[i].stale
        THEN [s.timers[i] EXCEPT !.orphan = TRUE] ELSE s.timers[i]]]

-----------------------------------------------------------------------------
(* Generations and member ids                                              *)

(* initNextGeneration's generationId += 1.  With Normalize the current     *)
(* generation stays 1 and every older one recorded anywhere becomes 0.     *)
Bump(s) ==
    IF Normalize /\ s.generation >= 1
    THEN LET Old(g) == IF g = NoGen THEN NoGen ELSE 0 IN
         [s EXCEPT !.cgen = [c \in Clients |-> Old(s.cgen[c])],
                   !.timers = [i \in DOMAIN s.timers |-> [s.timers[i] EXCEPT !.gen = Old(@)]],
                   !.store = [s.store EXCEPT !.gen = Old(@)]]
    ELSE [s EXCEPT !.generation = @ + 1]

(* GroupMetadata.generateMemberId: ids are fresh, handed out in order. *)
NewId(s) == IF s.nextId <= NumIds THEN s.nextId ELSE NoMember

(* ---- group store: the MemberMetadata a static append holds ---------- *)
(* A live group's MemberMetadata renamed (replaceStaticMember) or removed  *)
(* (n = NoMember): the appends in flight that hold it follow it.          *)
RenameWriteObjs(s, M, n) ==
    [s EXCEPT !.writes = [i \in DOMAIN @ |->
        IF ~@[i].stale /\ @[i].obj \in M THEN [@[i] EXCEPT !.obj = n] ELSE @[i]]]

(* A parked JoinGroup of member m was answered: a Static append's own     *)
(* JoinGroup, if parked under m, is answered now.                          *)
CloseWrites(s, m) ==
    [s EXCEPT !.writes = [i \in DOMAIN @ |->
        IF ~@[i].stale /\ @[i].obj = m THEN [@[i] EXCEPT !.open = FALSE] ELSE @[i]]]

-----------------------------------------------------------------------------
(* Clients receiving responses                                             *)

ResetClient(s, c, ph) ==
    [s EXCEPT !.cphase[c] = ph, !.cmember[c] = NoMember, !.cgen[c] = NoGen,
              !.cleader[c] = FALSE, !.cmembers[c] = {}, !.cassign[c] = {},
              !.cwait[c] = NoMember]

(* requestRejoin: the client keeps its member id and will send JoinGroup. *)
(* Its generation, leadership and assignment are not read again before    *)
(* the next JoinGroup response overwrites them (JoinGroup carries no       *)
(* generation; offset commits are not modelled), so they are dropped here  *)
(* (the eager protocol revokes the assignment) to keep states canonical.   *)
ClientRejoins(s, c) ==
    [s EXCEPT !.cphase[c] = "Unjoined", !.cgen[c] = NoGen, !.cleader[c] = FALSE,
              !.cmembers[c] = {}, !.cassign[c] = {}, !.cwait[c] = NoMember]

(* ILLEGAL_GENERATION: the generation is reset, the member id kept *)
ClientLosesGeneration(s, c) == ClientRejoins(s, c)

JoinResp(err, m, g, l, ms) == [err |-> err, member |-> m, gen |-> g, leader |-> l, members |-> ms]
JoinErr(err, m) == JoinResp(err, m, NoGen, NoMember, {})

(* AbstractCoordinator.JoinGroupResponseHandler *)
DeliverJoin(s, c, r) ==
    CASE r.err = "NONE" ->
           [s EXCEPT !.cphase[c] = "Joined", !.cmember[c] = r.member, !.cgen[c] = r.gen,
                     !.cleader[c] = (r.leader = r.member), !.cmembers[c] = r.members,
                     !.cwait[c] = NoMember]
      [] r.err = "MEMBER_ID_REQUIRED" ->
           [s EXCEPT !.cphase[c] = "Unjoined", !.cmember[c] = r.member, !.cwait[c] = NoMember]
      [] r.err = "UNKNOWN_MEMBER_ID" -> ResetClient(s, c, "Unjoined")
      [] r.err = "GROUP_MAX_SIZE_REACHED" -> ResetClient(s, c, "Down")   \* fatal to the consumer
      [] r.err = "FENCED_INSTANCE_ID" -> ResetClient(s, c, "Down")   \* fatal (FencedInstanceIdException)
      [] OTHER -> ClientRejoins(s, c)   \* NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE;
                                         \* INCONSISTENT_GROUP_PROTOCOL and
                                         \* INVALID_SESSION_TIMEOUT: KafkaConsumer.poll throws,
                                         \* the next poll joins again with the same config

(* History for SingleLeaderPerGeneration: a successful response naming its *)
(* own member leader.                                                      *)
NoteLeader(s, r) ==
    IF r.err = "NONE" /\ r.leader = r.member
    THEN [s EXCEPT !.genLeaders = @ \cup {r.member},
                   !.leaderLog = IF MaxFailovers > 0 THEN @ \cup {<<r.gen, r.member>>} ELSE @]
    ELSE s

(* The requester gets an immediate JoinGroup response. *)
ReplyJoin(s, c, r) == [NoteLeader(DeliverJoin(s, c, r), r) EXCEPT !.resp = r.err]

(* GroupMetadata.maybeInvokeJoinCallback *)
InvokeJoin(s, m, r) ==
    IF m \notin s.awaitingJoin THEN s
    ELSE LET s1 == NoteLeader(CloseWrites([s EXCEPT !.awaitingJoin = @ \ {m}], m), r)
             W == {c \in Clients : s.cphase[c] = "JoinWait" /\ s.cwait[c] = m}
         IN IF W = {} THEN s1 ELSE DeliverJoin(s1, CHOOSE c \in W : TRUE, r)

AssignmentOf(s, m) == IF m \in s.plan THEN s.plan ELSE {}

(* AbstractCoordinator.SyncGroupResponseHandler *)
DeliverSync(s, c, err, a) ==
    CASE err = "NONE" ->
           [s EXCEPT !.cphase[c] = "Stable", !.cassign[c] = a, !.cwait[c] = NoMember]
      [] err = "UNKNOWN_MEMBER_ID" -> ResetClient(s, c, "Unjoined")
      [] err = "ILLEGAL_GENERATION" -> ClientLosesGeneration(s, c)
      [] err = "FENCED_INSTANCE_ID" -> ResetClient(s, c, "Down")
      [] OTHER -> ClientRejoins(s, c)  \* REBALANCE_IN_PROGRESS, NOT_COORDINATOR, ...

ReplySync(s, c, err) ==
    [DeliverSync(s, c, err, AssignmentOf(s, s.cmember[c])) EXCEPT !.resp = err]

(* GroupMetadata.maybeInvokeSyncCallback *)
InvokeSync(s, m, err) ==
    IF m \notin s.awaitingSync THEN s
    ELSE LET s1 == [s EXCEPT !.awaitingSync = @ \ {m}]
             W == {c \in Clients : s.cphase[c] = "SyncWait" /\ s.cwait[c] = m}
         IN IF W = {} THEN s1 ELSE DeliverSync(s1, CHOOSE c \in W : TRUE, err, AssignmentOf(s, m))

(* AbstractCoordinator.HeartbeatResponseHandler *)
ReplyHeartbeat(s, c, err) ==
    LET s1 == CASE err = "REBALANCE_IN_PROGRESS" ->
                     IF s.cphase[c] = "Stable" THEN ClientRejoins(s, c) ELSE s
                [] err = "UNKNOWN_MEMBER_ID" -> ResetClient(s, c, "Unjoined")
                [] err = "ILLEGAL_GENERATION" -> ClientLosesGeneration(s, c)
                [] err = "FENCED_INSTANCE_ID" -> ResetClient(s, c, "Down")
                [] OTHER -> s
    IN [s1 EXCEPT !.resp = err]

-----------------------------------------------------------------------------
(* Heartbeat purgatory                                                     *)

(* MemberMetadata.hasSatisfiedHeartbeat, with heartbeatSatisfied = flag    *)
HasSatisfied(s, m, flag) ==
    IF m \in s.newMembers THEN flag
    ELSE flag \/ m \in s.awaitingJoin \/ m \in s.awaitingSync

(* Does heartbeatPurgatory.checkAndComplete(MemberKey(m)) complete timer t *)
(* (tryCompleteHeartbeat on t's group)?                                    *)
Completes(s, t, m, flag) ==
    /\ t.member = m
    /\ t.kind \in {"Heartbeat", "Pending"}
    /\ \/ t.stale                               \* its group is Dead
       \/ t.kind = "Heartbeat" /\ (m \notin s.members \/ HasSatisfied(s, m, flag))
       \/ t.kind = "Pending" /\ m \in s.members

CheckMemberKey(s, m, flag) ==
    [s EXCEPT !.timers = SelectSeq(@, LAMBDA t : ~Completes(s, t, m, flag))]

CheckMemberKeys(s, M, flag) ==
    [s EXCEPT !.timers = SelectSeq(@, LAMBDA t : ~\E m \in M : Completes(s, t, m, flag))]

(* completeAndScheduleNextExpiration: complete the member's heartbeat      *)
(* expectation, then watch a new DelayedHeartbeat, which tryCompleteElseWatch *)
(* completes at once (no timer) when the member is not new and awaits a    *)
(* join or sync.                                                           *)
ScheduleNext(s, m, d, durName) ==
    LET s1 == CheckMemberKey(s, m, TRUE)
    IN IF m \notin s1.members \/ HasSatisfied(s1, m, FALSE) THEN s1
       ELSE AddTimer(s1, Tmr("Heartbeat", m, s1.now + d, durName, NoGen, d, 0))

ScheduleHeartbeat(s, m) == ScheduleNext(s, m, s.mtimeouts[m][1], "session")

RECURSIVE ScheduleAll(_, _)
ScheduleAll(s, ms) ==
    IF ms = {} THEN s
    ELSE LET m == Min(ms) IN ScheduleAll(ScheduleHeartbeat(s, m), ms \ {m})

-----------------------------------------------------------------------------
(* GroupMetadata                                                           *)

AllJoined(s) == s.members = s.awaitingJoin /\ s.pending = {}   \* hasAllMembersJoined
(* GroupMetadata.rebalanceTimeoutMs: the largest of the members' *)
RebalanceTimeoutOf(s) ==
    IF s.members = {} THEN 0
    ELSE LET r == {s.mtimeouts[m][2] : m \in s.members} IN CHOOSE x \in r : \A y \in r : y <= x

(* ---- protocol selection: GroupMetadata --------------------------------- *)
(* GroupMetadata.candidateProtocols: the protocols every member supports   *)
(* (supportedProtocols' count equals members.size).                        *)
Candidates(s) ==
    {p \in UNION {Names(s.mprotocols[m]) : m \in s.members} :
        \A m \in s.members : p \in Names(s.mprotocols[m])}

(* MemberMetadata.vote: "vote for a protocol based on the given candidates" *)
(* -- the member's most preferred candidate.                                *)
Vote(s, m, cands) ==
    LET ps == s.mprotocols[m]
    IN ps[CHOOSE i \in DOMAIN ps : ps[i] \in cands /\ \A j \in 1..(i - 1) : ps[j] \notin cands]

Rank(p) == CHOOSE i \in DOMAIN ProtocolOrder : ProtocolOrder[i] = p

(* The most voted protocol, each member m voting V(m) (ties: the least     *)
(* name, see ProtocolOrder).                                                *)
MostVoted(s, V(_)) ==
    LET voted == {V(m) : m \in s.members}
        Votes(p) == Cardinality({m \in s.members : V(m) = p})
        best == {p \in voted : \A q \in voted : Votes(q) <= Votes(p)}
    IN CHOOSE p \in best : \A q \in best : Rank(p) <= Rank(q)

(* GroupMetadata.selectProtocol: every member votes for its most preferred *)
(* candidate, the most voted wins.                                          *)
SelectProtocol(s) == LET cands == Candidates(s) IN MostVoted(s, LAMBDA m : Vote(s, m, cands))

(* initNextGeneration: protocolName = Some(selectProtocol), or None for a  *)
(* group left with no member.  Bug vote_ignores_candidates: each member    *)
(* votes its first choice, whether every member supports it or not.        *)
NextGenerationProtocol(s) ==
    IF s.members = {} THEN NoProtocol
    ELSE IF Bug = "vote_ignores_candidates" THEN MostVoted(s, LAMBDA m : s.mprotocols[m][1])
    ELSE SelectProtocol(s)

(* GroupMetadata.supportsProtocols(memberProtocolType, memberProtocols): an *)
(* Empty group takes any non-empty list (the type is always "consumer"      *)
(* here); otherwise one of the member's protocols must be supported by     *)
(* every member (the joining member's own earlier protocols count).        *)
SupportsProtocols(s, ps) ==
    IF s.gstate = "Empty" THEN ps # <<>>
    ELSE \E p \in Names(ps) : \A m \in s.members : p \in Names(s.mprotocols[m])
(* ---- end protocol selection: GroupMetadata ----------------------------- *)

(* GroupMetadata.remove of the members M; nl is the new leader if the      *)
(* leader is among them (members.keys.headOption).                         *)
GroupRemoveSet(s, M, nl) ==
    LET rest == s.members \ M
        need == s.leader \in M /\ rest # {} /\ Bug # "leader_not_reassigned"
        newLeader == IF s.leader \notin M \/ Bug = "leader_not_reassigned" THEN s.leader
                     ELSE IF rest = {} THEN NoMember ELSE nl
    IN [s EXCEPT !.members = rest, !.awaitingJoin = @ \ M, !.awaitingSync = @ \ M,
                 !.newMembers = @ \ M, !.pending = @ \ M, !.pendingSync = @ \ M,
                 !.leader = newLeader,
                 !.staticMembers = [I \in Instances |-> IF @[I] \in M THEN NoMember ELSE @[I]],
                 !.nlNeed = IF need THEN rest ELSE @,
                 !.ok = @ /\ (need => nl \in rest),
                 !.writes = RenameWriteObjs(s, M, NoMember).writes]

GroupRemove(s, m, nl) == GroupRemoveSet(s, {m}, nl)

CreateGroup(s) ==  \* groupManager.getOrMaybeCreateGroup: new GroupMetadata(groupId, Empty)
    [s EXCEPT !.gstate = "Empty", !.generation = 0, !.leader = NoMember, !.members = {},
              !.pending = {}, !.awaitingJoin = {}, !.awaitingSync = {}, !.newMembers = {},
              !.pendingSync = {}, !.plan = {}, !.newMemberAdded = FALSE,
              !.genLeaders = {}, !.genMembers = {}, !.protocol = NoProtocol,
              !.staticMembers = [I \in Instances |-> NoMember]]

(* The stored static mapping is read from the stored members, as Kafka's   *)
(* record holds it (GroupMetadataValue: each member's group_instance_id;   *)
(* GroupMetadata.loadGroup re-adds a static member for each): an append    *)
(* acknowledged later (StoreAsync) stores the members of its own time, so  *)
(* the mapping cannot be the group's current one.                          *)
StaticIn(s, ms) ==
    [I \in Instances |-> IF \E m \in ms : s.minstance[m] = I
                         THEN CHOOSE m \in ms : s.minstance[m] = I ELSE NoMember]

StoreGroup(s, st) == IF MaxFailovers > 0 THEN [s EXCEPT !.store = st, !.storeStatic = StaticIn(s, st.members)] ELSE s

(* ---- group store: the appends ------------------------------------------ *)
(* GroupMetadataManager.storeGroup appends the group's metadata record to  *)
(* __consumer_offsets and calls its callback when the append is            *)
(* acknowledged (appendForGroup -> replicaManager.appendRecords), later:   *)
(* with StoreAsync the append is queued in `writes` and the StoreCallback  *)
(* step (below) completes the oldest; without it (every model but store)   *)
(* the write succeeds inside the step that makes it, as before.  Sync: the *)
(* leader's SyncGroup (doSyncGroup); Empty: onCompleteJoin of a group left *)
(* with no member (its callback only logs an error).  `stale`: the group   *)
(* was unloaded since (the callback holds the Dead GroupMetadata).         *)
StoreAsync == FALSE     \* a model sets StoreAsync = TRUE
(* The append errors a model lets the store return (StoreErrors, a subset *)
(* of DOMAIN AppendError), and storeGroup's translation of each into the   *)
(* error its callback sees ("transform the log append error code to the   *)
(* corresponding the commit status error code"; any other passes as is).  *)
StoreErrors == {}
AppendError == [UNKNOWN_TOPIC_OR_PARTITION |-> "COORDINATOR_NOT_AVAILABLE",
                NOT_ENOUGH_REPLICAS |-> "COORDINATOR_NOT_AVAILABLE",
                NOT_ENOUGH_REPLICAS_AFTER_APPEND |-> "COORDINATOR_NOT_AVAILABLE",
                NOT_LEADER_OR_FOLLOWER |-> "NOT_COORDINATOR",
                KAFKA_STORAGE_ERROR |-> "NOT_COORDINATOR",
                REQUEST_TIMED_OUT |-> "REBALANCE_IN_PROGRESS",
                MESSAGE_TOO_LARGE |-> "UNKNOWN_SERVER_ERROR",
                RECORD_LIST_TOO_LARGE |-> "UNKNOWN_SERVER_ERROR",
                INVALID_FETCH_SIZE |-> "UNKNOWN_SERVER_ERROR"]
AllAppendErrors == DOMAIN AppendError   \* for StoreErrors <- AllAppendErrors
StoreOutcomes == {"NONE"} \cup StoreErrors
CoordinatorErrorFor(e) == IF e = "NONE" THEN "NONE" ELSE AppendError[e]

Write(kind, g, l, ms, p) ==
    [kind |-> kind, gen |-> g, leader |-> l, members |-> ms, plan |-> p, stale |-> FALSE,
     member |-> NoMember, old |-> NoMember, obj |-> NoMember, skip |-> FALSE,
     cleader |-> NoMember, open |-> FALSE]

(* updateStaticMemberAndRebalance's append (kind "Static"): the callback   *)
(* needs the new and the old member id, the MemberMetadata it holds (obj:  *)
(* that object's member id now -- a later replaceStaticMember renames it,  *)
(* a removal drops it, NoMember), the JoinGroup's supportSkippingAssignment *)
(* (skip), the leader when the join came (cleader), and whether that       *)
(* JoinGroup is still unanswered (open: its responseCallback was not yet   *)
(* invoked).                                                               *)
StaticWrite(s, new, old, skip, curLeader) ==
    [Write("Static", s.generation, s.leader, s.members, s.plan)
        EXCEPT !.member = new, !.old = old, !.obj = new, !.skip = skip, !.cleader = curLeader,
               !.open = TRUE]


(* storeGroup(group, assignment, callback): synchronous success, or queued. *)
StoreWrite(s, w) ==
    IF StoreAsync THEN [s EXCEPT !.writes = Append(@, w)]
    ELSE StoreGroup(s, [exists |-> TRUE, gen |-> w.gen, leader |-> w.leader,
                        members |-> w.members, plan |-> w.plan])
StaleWrites(ws) == [i \in DOMAIN ws |-> [ws[i] EXCEPT !.stale = TRUE]]

(* The leader's SyncGroup is answered as stored: doSyncGroup's storeGroup  *)
(* callback found the group "still in the CompletingRebalance state and    *)
(* the same generation" with Errors.NONE, so setAndPropagateAssignment     *)
(* told every parked member NONE and transitionTo(Stable) followed.  The   *)
(* one place a generation is acknowledged to its clients as written: a     *)
(* callback on an unloaded (Dead) GroupMetadata acknowledges nothing.      *)
Acknowledged(s) ==
    LET s1 == [s EXCEPT !.gstate = "Stable"]
    IN IF MaxFailovers > 0 THEN [s1 EXCEPT !.ackLog = @ \cup {<<s.generation, s.leader>>}] ELSE s1
(* ---- end group store: the appends -------------------------------------- *)

(* ---- loading window: the answers -------------------------------------- *)
(* While the partition loads, validateGroupStatus answers                  *)
(* COORDINATOR_LOAD_IN_PROGRESS (groupManager.isGroupLoading); handleSyncGroup *)
(* turns it into REBALANCE_IN_PROGRESS (the member rejoins) and            *)
(* handleHeartbeat into NONE ("the group is still loading, so respond just *)
(* blindly").  Otherwise a coordinator without the group: NOT_COORDINATOR. *)
NotLoadedError(s) == IF s.loading THEN "COORDINATOR_LOAD_IN_PROGRESS" ELSE "NOT_COORDINATOR"
NotLoadedSyncError(s) == IF s.loading THEN "REBALANCE_IN_PROGRESS" ELSE "NOT_COORDINATOR"
NotLoadedHeartbeatError(s) == IF s.loading THEN "NONE" ELSE "NOT_COORDINATOR"
(* ---- end loading window: the answers ---------------------------------- *)

-----------------------------------------------------------------------------
(* Rebalance purgatory: DelayedJoin completion, DelayedSync, prepareRebalance *)

(* propagateAssignment: answer every parked SyncGroup and reset the        *)
(* session timeout of each member answered.                                *)
RECURSIVE PropagateAssignment(_, _, _)
PropagateAssignment(s, ms, err) ==
    IF ms = {} THEN s
    ELSE LET m == Min(ms)
             invoked == m \in s.awaitingSync
             s1 == InvokeSync(s, m, err)
             s2 == IF invoked /\ Bug # "propagate_no_heartbeat_reschedule"
                   THEN ScheduleHeartbeat(s1, m) ELSE s1
         IN PropagateAssignment(s2, ms \ {m}, err)

(* resetAndPropagateAssignmentError *)
ResetAndPropagateAssignmentError(s) ==
    PropagateAssignment([s EXCEPT !.plan = {}], s.members, "REBALANCE_IN_PROGRESS")

(* tryCompletePendingSync on rebalancePurgatory.checkAndComplete(GroupSyncKey) *)
SyncDone(s, t) ==
    \/ t.gen # s.generation
    \/ s.gstate \in {"Dead", "Empty", "PreparingRebalance"}
    \/ s.pendingSync = {}

MaybeCompleteSyncExpiration(s) ==
    [s EXCEPT !.timers = SelectSeq(@, LAMBDA t : ~(t.kind = "Sync" /\ ~t.stale /\ SyncDone(s, t)))]

RemovePendingSyncMember(s, m) ==
    MaybeCompleteSyncExpiration([s EXCEPT !.pendingSync = @ \ {m}])

RemoveSyncExpiration(s) == MaybeCompleteSyncExpiration([s EXCEPT !.pendingSync = {}])

(* The onCompleteJoin loop over all members: answer the parked JoinGroup,  *)
(* reset the session timeout, isNew = false, addPendingSyncMember.         *)
RECURSIVE CompleteJoinLoop(_, _, _)
CompleteJoinLoop(s, ms, list) ==
    IF ms = {} THEN s
    ELSE LET m == Min(ms)
             r == JoinResp("NONE", m, s.generation, s.leader, IF m = s.leader THEN list ELSE {})
             s1 == ScheduleHeartbeat(InvokeJoin(s, m, r), m)
             s2 == [s1 EXCEPT !.newMembers = @ \ {m}, !.pendingSync = @ \cup {m}]
         IN CompleteJoinLoop(s2, ms \ {m}, list)

(* DelayedJoin completion: GroupCoordinator.onCompleteJoin.  Dynamic      *)
(* members that have not rejoined are removed (notYetRejoinedMembers       *)
(* .filterNot(_.isStaticMember)); static ones are kept.  Then              *)
(* maybeElectNewJoinedLeader keeps the leader if it rejoined, else elects  *)
(* a rejoined member (jl); if no member rejoined but static members remain *)
(* it returns false and a new DelayedJoin waits another rebalance timeout  *)
(* (the group stays PreparingRebalance; if group.remove had to replace the *)
(* leader, jl is its headOption among the kept members).                   *)
OnCompleteJoin(s, jl) ==
    LET statics == {m \in s.members : s.minstance[m] # NoInstance}
        gone == (s.members \ s.awaitingJoin) \ statics
        rest == s.members \ gone
        joined == s.awaitingJoin
        s1 == CheckMemberKeys([s EXCEPT !.members = rest, !.newMembers = @ \ gone,
                                        !.pendingSync = @ \ gone, !.awaitingSync = @ \ gone],
                              gone, FALSE)     \* group.remove; removeHeartbeatForLeavingMember
        postpone == joined = {} /\ rest # {}
        need == rest # {} /\ s.leader \notin joined /\ ~(postpone /\ s.leader \in rest)
        cands == IF postpone THEN rest ELSE joined
        ldr == IF rest = {} THEN NoMember ELSE IF s.leader \in joined THEN s.leader
               ELSE IF postpone /\ s.leader \in rest THEN s.leader ELSE jl
        s2 == [s1 EXCEPT !.jlNeed = IF need THEN cands ELSE @, !.ok = @ /\ (need => jl \in cands)]
        s3 == IF Bug = "generation_not_bumped" THEN s2 ELSE Bump(s2)
        hist == IF s3.generation = s.generation /\ ~Normalize THEN s.genLeaders ELSE {}
    IN IF postpone
       THEN \* rebalancePurgatory.tryCompleteElseWatch(new DelayedJoin(...)): not all joined
            AddTimer([s2 EXCEPT !.leader = ldr, !.staticMembers = [I \in Instances |->
                                   IF @[I] \in gone THEN NoMember ELSE @[I]]],
                     Tmr("Join", NoMember, s2.now + Rebalance, "none", NoGen, Rebalance, 0))
       ELSE IF rest = {}
       THEN \* initNextGeneration to Empty; storeGroup(group, Map.empty)
            LET s4 == [s3 EXCEPT !.gstate = "Empty", !.leader = NoMember, !.pendingSync = {},
                                 !.plan = {}, !.genLeaders = hist, !.genMembers = {},
                                 !.protocol = NoProtocol,
                                 !.staticMembers = [I \in Instances |-> NoMember],
                                 !.generation = IF Bug = "empty_generation_reset" THEN NoGen ELSE @]
            IN StoreWrite(s4, Write("Empty", s4.generation, NoMember, {}, {}))
       ELSE \* initNextGeneration to CompletingRebalance, answer the joins, schedulePendingSync
            LET s4 == [s3 EXCEPT !.gstate = "CompletingRebalance", !.leader = ldr,
                                 !.pendingSync = {}, !.genLeaders = hist, !.genMembers = rest,
                                 !.protocol = NextGenerationProtocol(s3)]
                list == IF Bug = "leader_given_stale_members" THEN s.members ELSE rest
                s5 == CompleteJoinLoop(s4, rest, list)
            IN IF Bug = "no_delayed_sync" THEN s5
               ELSE AddTimer(s5, Tmr("Sync", NoMember, s5.now + RebalanceTimeoutOf(s5), "none",
                                     s5.generation, RebalanceTimeoutOf(s5), 0))

HasJoinOp(s) == \E i \in DOMAIN s.timers : s.timers[i].kind = "Join" /\ ~s.timers[i].stale
(* rebalancePurgatory.checkAndComplete(GroupJoinKey): tryCompleteJoin.     *)
(* An InitialDelayedJoin never completes early (tryComplete = false).      *)
TryCompleteJoin(s, jl) ==
    IF s.gstate = "PreparingRebalance" /\ HasJoinOp(s) /\ AllJoined(s)
    THEN OnCompleteJoin([s EXCEPT !.timers = SelectSeq(@, LAMBDA t : ~(t.kind = "Join" /\ ~t.stale))], jl)
    ELSE s

(* GroupCoordinator.prepareRebalance *)
PrepareRebalance(s, jl) ==
    LET s1 == IF s.gstate = "CompletingRebalance" THEN ResetAndPropagateAssignmentError(s) ELSE s
        s2 == RemoveSyncExpiration(s1)
        s3 == [s2 EXCEPT !.gstate = "PreparingRebalance", !.plan = {}, !.genMembers = {},
                         !.generation = IF Bug = "rebalance_rollback" /\ s.gstate = "CompletingRebalance"
                                        THEN @ - 1 ELSE @]
        rt == RebalanceTimeoutOf(s)
    IN IF s.gstate = "Empty"
       THEN AddTimer(s3, Tmr("InitialJoin", NoMember, s3.now + InitialDelay, "none", NoGen,
                             InitialDelay, Max0(rt - InitialDelay)))
       ELSE IF AllJoined(s3) THEN OnCompleteJoin(s3, jl)  \* tryCompleteElseWatch completes at once
       ELSE AddTimer(s3, Tmr("Join", NoMember, s3.now + rt, "none", NoGen, rt, 0))

MaybePrepareRebalance(s, jl) ==   \* canRebalance
    IF s.gstate \in {"Stable", "CompletingRebalance", "Empty"} THEN PrepareRebalance(s, jl) ELSE s

(* GroupCoordinator.removeMemberAndUpdateGroup *)
RemoveMemberAndUpdateGroup(s, m, nl, jl) ==
    LET s1 == IF Bug = "remove_without_join_callback" THEN s
              ELSE InvokeJoin(s, m, JoinErr("UNKNOWN_MEMBER_ID", NoMember))
        s2 == GroupRemove(s1, m, nl)
    IN CASE s2.gstate \in {"Stable", "CompletingRebalance"} ->
              IF Bug = "last_leave_no_rebalance" /\ s2.members = {} THEN s2
              ELSE MaybePrepareRebalance(s2, jl)
         [] s2.gstate = "PreparingRebalance" -> TryCompleteJoin(s2, jl)
         [] OTHER -> s2

(* GroupCoordinator.addMemberAndRebalance; the requester c parks its join. *)
AddMemberAndRebalance(s, m, c, jl) ==
    LET s0 == IF s.gstate = "PreparingRebalance" /\ s.generation = 0
              THEN [s EXCEPT !.newMemberAdded = TRUE] ELSE s
        s1 == [s0 EXCEPT !.members = @ \cup {m}, !.newMembers = @ \cup {m},
                         !.awaitingJoin = @ \cup {m}, !.pending = @ \ {m}, !.mtimeouts[m] = s0.jt,
                         !.mprotocols[m] = s0.jp,
                         !.leader = IF @ = NoMember THEN m ELSE @,
                         !.cphase[c] = "JoinWait", !.cwait[c] = m, !.resp = "PARKED"]
        s2 == ScheduleNext(s1, m, NewMemberTimeout, "newMember")
    IN MaybePrepareRebalance(s2, jl)

(* GroupCoordinator.updateMemberAndRebalance: the new callback replaces    *)
(* any earlier one (of a request the client gave up on).                   *)
UpdateMemberAndRebalance(s, m, c, jl) ==
    MaybePrepareRebalance([s EXCEPT !.awaitingJoin = @ \cup {m}, !.cphase[c] = "JoinWait",
                                    !.cwait[c] = m, !.resp = "PARKED", !.mtimeouts[m] = s.jt,
                                    !.mprotocols[m] = s.jp], jl)

-----------------------------------------------------------------------------
(* ---- static membership (group.instance.id) ----                          *)
(* Kafka 3.9 GroupCoordinator.scala doStaticNewMemberJoinGroup,             *)
(* updateStaticMemberAndRebalance, validateCurrentMember; GroupMetadata     *)
(* .scala replaceStaticMember, add/remove (staticMembers).                  *)

Relabel(S, o, n) == IF o \in S THEN (S \ {o}) \cup {n} ELSE S

(* validateCurrentMember's instance half, for a request of client c with   *)
(* member id mid: the instance id must be known and map to mid.            *)
StaticCheck(s, c, mid) ==
    LET I == InstanceOf(c) IN
    IF I = NoInstance THEN "NONE"
    ELSE IF s.staticMembers[I] = NoMember THEN "UNKNOWN_MEMBER_ID"
    ELSE IF s.staticMembers[I] # mid THEN "FENCED_INSTANCE_ID"
    ELSE "NONE"

(* GroupMetadata.replaceStaticMember: the old id's parked JoinGroup and    *)
(* SyncGroup are answered FENCED_INSTANCE_ID; the MemberMetadata moves to  *)
(* the new id (keeping isNew, its assignment and its leadership); the old  *)
(* id stays in pendingSyncMembers (Kafka does not touch it).  The plan and *)
(* the clients' member lists and assignments name members, so they are     *)
(* relabelled too (the partitions assigned do not change) -- when rl: in  *)
(* Stable, where the group is stored with the new id; in the other states  *)
(* (and a Stable group about to rebalance for a change of protocol) no     *)
(* plan is installed, and the stored one (which a reload restores) keeps   *)
(* the old id.  The old id's                                               *)
(* DelayedHeartbeat "will expire without effect since the group no longer  *)
(* contains that member id": an orphan.                                    *)
ReplaceStaticMember(s, I, old, new, rl) ==
    LET s1 == InvokeSync(InvokeJoin(s, old, JoinErr("FENCED_INSTANCE_ID", old)), old, "FENCED_INSTANCE_ID")
        keep == Bug = "static_replace_keeps_old_member"
        RL(S) == IF rl THEN Relabel(S, old, new) ELSE S
        s2 == [s1 EXCEPT !.members = IF keep THEN @ \cup {new} ELSE Relabel(@, old, new),
                         !.newMembers = IF keep THEN @ ELSE Relabel(@, old, new),
                         !.leader = IF @ = old THEN new ELSE @,
                         !.staticMembers[I] = new, !.minstance[new] = I,
                         !.plan = RL(@), !.genMembers = RL(@),
                         !.genLeaders = Relabel(@, old, new),
                         !.leaderLog = {IF p = <<s.generation, old>> THEN <<s.generation, new>> ELSE p : p \in @},
                         !.ackLog = {IF p = <<s.generation, old>> THEN <<s.generation, new>> ELSE p : p \in @},
                         !.cassign = [c \in Clients |-> RL(@[c])],
                         !.cmembers = [c \in Clients |-> RL(@[c])],
                         !.writes = RenameWriteObjs(s1, {old}, new).writes]
    IN IF keep THEN s2 ELSE OrphanTimers(s2, old)

(* updateStaticMemberAndRebalance's storeGroup callback for append w     *)
(* with the error err it sees.  Success: group.maybeInvokeJoinCallback on  *)
(* the MemberMetadata it holds (w.obj: the join parked there now, which a  *)
(* second rejoin of the instance may have replaced) with the new member id *)
(* and the generation and leader of the callback's group (an unloaded      *)
(* group's, the append's).  Error: "revert the update of the static        *)
(* member": updateMember(..., null) drops the object's parked JoinGroup,   *)
(* replaceStaticMember(instance, new, old) renames it back (fencing what   *)
(* the new id has parked), completeAndScheduleNextHeartbeatExpiration of   *)
(* the old id, then the join's own responseCallback gets the error and no  *)
(* member id.  Kafka's replaceStaticMember throws (IllegalArgumentException, *)
(* no answer) when the new id is no longer a member (renamed by a second   *)
(* rejoin, or removed): kgc's coordinator then reverts nothing and answers *)
(* the join if it is still unanswered (it never is: the rename and the     *)
(* removal answer it), so the step changes no client.  An unloaded group's *)
(* revert touches only the Dead GroupMetadata.                            *)
StaticStored(s, w, err) ==
    LET m == w.member
        live == ~w.stale
        g == IF live THEN s.generation ELSE w.gen
        l == IF live THEN s.leader ELSE w.leader
        ms == IF live THEN s.members ELSE w.members
        ok == IF w.skip
              THEN JoinResp("NONE", m, g, l, IF l = m THEN ms ELSE {})
              ELSE JoinResp("NONE", m, g, w.cleader, {})
        W == {c \in Clients : s.cphase[c] = "JoinWait" /\ s.cwait[c] = m}
        Answer(x, r) == IF w.open /\ W # {} THEN DeliverJoin(x, CHOOSE c \in W : TRUE, r) ELSE x
    IN IF err = "NONE"
       THEN IF live THEN InvokeJoin(s, w.obj, ok)
            ELSE IF w.open /\ W # {}
            THEN LET s1 == DeliverJoin(s, CHOOSE c \in W : TRUE, ok)
                 IN IF ok.leader = m /\ MaxFailovers > 0
                    THEN [s1 EXCEPT !.leaderLog = @ \cup {<<g, m>>}] ELSE s1
            ELSE s
       ELSE IF ~live \/ w.obj # m THEN Answer(s, JoinErr(err, NoMember))
       ELSE IF Bug = "static_revert_dropped" THEN Answer(s, JoinErr(err, NoMember))
       ELSE LET I == s.minstance[m]
                \* Kafka reads the "old" protocols after updateMember: the new ones stay
                s1 == [s EXCEPT !.awaitingJoin = @ \ {m}, !.mprotocols[w.old] = s.mprotocols[m]]
                s2 == ScheduleHeartbeat(ReplaceStaticMember(s1, I, m, w.old, s1.gstate = "Stable"), w.old)
            IN Answer(s2, JoinErr(err, NoMember))

(* GroupCoordinator.updateStaticMemberAndRebalance: a static member        *)
(* rejoins with an unknown member id and gets a new one, and updateMember   *)
(* gives it the protocols it sent.  Stable: if the next generation's       *)
(* selectProtocol is the group's protocolName, the group is stored with    *)
(* the new id and the JoinGroup is answered in storeGroup's callback       *)
(* (StaticStored): with StoreAsync it stays parked under the new id until  *)
(* the StoreCallback step; without it the store succeeds at once.  The     *)
(* answer carries the current generation: v9+ (skip) tells a rejoining     *)
(* leader it leads, with the members, and to skip the assignor; before v9  *)
(* the old leader id is returned, so a rejoining leader acts as a          *)
(* follower.  CompletingRebalance: prepareRebalance (the leader may be     *)
(* assigning to the old id).  PreparingRebalance: the join waits like any  *)
(* other.  A Stable group whose selected protocol would change ("Group's    *)
(* selectedProtocol will change because static member ... joined with      *)
(* change of protocol") is not stored: maybePrepareRebalance.              *)
UpdateStaticMemberAndRebalance(s, c, I, old, new, skip, jl) ==
    LET curLeader == s.leader
        Replaced(rl) ==
            [ScheduleHeartbeat(ReplaceStaticMember(s, I, old, new, rl), new)
                EXCEPT !.awaitingJoin = @ \cup {new}, !.cphase[c] = "JoinWait",
                       !.cwait[c] = new, !.resp = "PARKED", !.mprotocols[new] = s.jp]
        changes == LET p == Replaced(FALSE) IN p.gstate = "Stable" /\ p.protocol # SelectProtocol(p)
        s2 == Replaced(s.gstate = "Stable" /\ ~changes)
        w == StaticWrite(s2, new, old, skip, curLeader)
    IN CASE changes -> MaybePrepareRebalance(s2, jl)
         [] s2.gstate = "Stable" ->
              IF Bug = "static_replace_not_stored" THEN StaticStored([s2 EXCEPT !.resp = "NONE"], w, "NONE")
              ELSE IF StoreAsync THEN StoreWrite(s2, w)
              ELSE StaticStored([StoreGroup(s2, [exists |-> TRUE, gen |-> s2.generation,
                                                 leader |-> s2.leader, members |-> s2.members,
                                                 plan |-> s2.plan])
                                 EXCEPT !.resp = "NONE"], w, "NONE")
         [] s2.gstate = "CompletingRebalance" -> PrepareRebalance(s2, jl)
         [] OTHER -> s2

(* doStaticNewMemberJoinGroup: a static client joining with member id ""   *)
(* (never told MEMBER_ID_REQUIRED) replaces its instance's member, or is   *)
(* added like a new member (GroupMetadata.add records the instance).      *)
DoStaticNewMemberJoin(s, c, skip, jl) ==
    LET m == NewId(s)
        I == InstanceOf(c)
    IN IF m = NoMember THEN [s EXCEPT !.ok = FALSE]      \* model bound: no id left
       ELSE LET s0 == [s EXCEPT !.nextId = @ + 1, !.newId = m]
            IN IF s.staticMembers[I] # NoMember
               THEN UpdateStaticMemberAndRebalance(s0, c, I, s.staticMembers[I], m, skip, jl)
               ELSE AddMemberAndRebalance([s0 EXCEPT !.staticMembers[I] = m, !.minstance[m] = I], m, c, jl)

-----------------------------------------------------------------------------
(* Request handlers (GroupCoordinator.handleJoinGroup and the others)     *)

(* acceptJoiningMember *)
AcceptJoiningMember(s, mid) ==
    \/ Bug = "no_max_size_check"
    \/ s.gstate \in {"Empty", "Dead"}
    \/ s.gstate = "PreparingRebalance" /\
         ((mid \in s.members /\ mid \in s.awaitingJoin) \/ Cardinality(s.awaitingJoin) < MaxGroupSize)
    \/ s.gstate \in {"CompletingRebalance", "Stable"} /\
         (mid \in s.members \/ Cardinality(s.members) < MaxGroupSize)

(* doNewMemberJoinGroup -> doDynamicNewMemberJoinGroup; supportsProtocols  *)
(* is checked first, for static and dynamic members alike.                 *)
DoNewMemberJoin(s, c, rk, jl) ==
    LET m == NewId(s) IN
    IF ~SupportsProtocols(s, s.jp)
    THEN ReplyJoin(s, c, JoinErr("INCONSISTENT_GROUP_PROTOCOL", NoMember))
    ELSE IF InstanceOf(c) # NoInstance THEN DoStaticNewMemberJoin(s, c, rk, jl)
    ELSE IF m = NoMember THEN [s EXCEPT !.ok = FALSE]      \* model bound: no id left
    ELSE LET s0 == [s EXCEPT !.nextId = @ + 1, !.newId = m]
         IN IF rk
            THEN \* addPendingMember, addPendingMemberExpiration, MEMBER_ID_REQUIRED
                 \* (Kafka keeps no MemberMetadata, so no timeouts, for a pending member)
                 LET s1 == AddTimer([s0 EXCEPT !.pending = @ \cup {m}],
                                    Tmr("Pending", m, s0.now + s0.jt[1], "session", NoGen, s0.jt[1], 0))
                 IN ReplyJoin(s1, c, JoinErr("MEMBER_ID_REQUIRED", m))
            ELSE AddMemberAndRebalance(s0, m, c, jl)

(* The current generation's information, answered at once. *)
JoinReplyCurrent(s, c, m, inCR) ==
    LET l == IF Bug = "two_leaders" /\ inCR THEN m ELSE s.leader
    IN ReplyJoin(s, c, JoinResp("NONE", m, s.generation, l,
                                IF inCR /\ l = m THEN s.members ELSE {}))

(* doCurrentMemberJoinGroup: supportsProtocols first (the member's own     *)
(* protocols count among the group's).  member.matches(protocols) fails    *)
(* when the metadata bytes changed (chg0) or the names differ from the      *)
(* member's: after a reload a member holds only the group's protocol       *)
(* (GroupLoad), so a client with more than one rejoins as changed.         *)
DoCurrentMemberJoin(s, c, mid, chg0, jl) ==
    LET chg == chg0 \/ s.mprotocols[mid] # s.jp IN
    IF ~SupportsProtocols(s, s.jp) THEN ReplyJoin(s, c, JoinErr("INCONSISTENT_GROUP_PROTOCOL", mid))
    ELSE IF mid \in s.pending THEN AddMemberAndRebalance(s, mid, c, jl)   \* a pending member rejoins
    ELSE IF StaticCheck(s, c, mid) # "NONE" THEN ReplyJoin(s, c, JoinErr(StaticCheck(s, c, mid), mid))
    ELSE IF mid \notin s.members THEN ReplyJoin(s, c, JoinErr("UNKNOWN_MEMBER_ID", mid))
    ELSE CASE s.gstate = "PreparingRebalance" -> UpdateMemberAndRebalance(s, mid, c, jl)
           [] s.gstate = "CompletingRebalance" ->
                IF chg THEN UpdateMemberAndRebalance(s, mid, c, jl)
                ELSE JoinReplyCurrent(s, c, mid, TRUE)
           [] s.gstate = "Stable" ->
                IF mid = s.leader \/ chg THEN UpdateMemberAndRebalance(s, mid, c, jl)
                ELSE JoinReplyCurrent(s, c, mid, FALSE)
           [] OTHER -> ReplyJoin(s, c, JoinErr("UNKNOWN_MEMBER_ID", mid))

(* handleJoinGroup for client c (member id cmember[c]). *)
JoinGroupHandler(s0_, c, rk, chg, nl, jl) ==
    LET mid == s0_.cmember[c]
        s == [s0_ EXCEPT !.jt = TimeoutsOf(c), !.jp = ProtocolsOf(c)]
    IN
    IF ~s.loaded THEN ReplyJoin(s, c, JoinErr(NotLoadedError(s), mid))
    ELSE IF s.jt[1] < MinSession \/ s.jt[1] > MaxSession
    THEN ReplyJoin(s, c, JoinErr("INVALID_SESSION_TIMEOUT", mid))
    ELSE IF s.gstate = "Dead" /\ mid # NoMember
    THEN ReplyJoin(s, c, JoinErr("UNKNOWN_MEMBER_ID", mid))
    ELSE LET s0 == IF s.gstate = "Dead" THEN CreateGroup(s) ELSE s
             s1 == IF ~AcceptJoiningMember(s0, mid)
                   THEN \* group.remove(memberId): no callback, no heartbeat completion
                        LET r0 == IF mid \in s0.members THEN OrphanTimers(GroupRemove(s0, mid, nl), mid)
                                  ELSE IF mid \in s0.pending
                                       THEN OrphanTimers([s0 EXCEPT !.pending = @ \ {mid}], mid)
                                  ELSE s0
                        IN ReplyJoin(r0, c, JoinErr("GROUP_MAX_SIZE_REACHED", NoMember))
                   ELSE IF mid = NoMember THEN DoNewMemberJoin(s0, c, rk, jl)
                   ELSE DoCurrentMemberJoin(s0, c, mid, chg, jl)
         IN TryCompleteJoin(s1, jl)   \* "attempt to complete JoinGroup"

(* handleSyncGroup / doSyncGroup; a leader sends its plan: the member list *)
(* it got (its assignor gives every listed member a part).  consistent:    *)
(* the request's protocol type and name (SyncGroup v5+) are the group's;   *)
(* otherwise validateSyncGroup answers INCONSISTENT_GROUP_PROTOCOL after    *)
(* the member and generation checks, in every state, and nothing changes.  *)
SyncGroupHandler(s, c, consistent) ==
    LET m == s.cmember[c]
        g == s.cgen[c]
        P == s.cmembers[c]
        s0 == IF consistent THEN [s EXCEPT !.cmembers[c] = {}] ELSE s   \* the list is used up
        Park(x) == [x EXCEPT !.awaitingSync = @ \cup {m}, !.cphase[c] = "SyncWait",
                             !.cwait[c] = m, !.resp = "PARKED"]
    IN IF ~s.loaded THEN ReplySync(s0, c, NotLoadedSyncError(s))
       ELSE IF s.gstate # "Dead" /\ StaticCheck(s, c, m) # "NONE" THEN ReplySync(s0, c, StaticCheck(s, c, m))
       ELSE IF s.gstate = "Dead" \/ m \notin s.members THEN ReplySync(s0, c, "UNKNOWN_MEMBER_ID")
       ELSE IF g # s.generation THEN ReplySync(s0, c, "ILLEGAL_GENERATION")
       ELSE IF ~consistent THEN [s0 EXCEPT !.resp = "INCONSISTENT_GROUP_PROTOCOL"]
       ELSE CASE s.gstate = "Empty" -> ReplySync(s0, c, "UNKNOWN_MEMBER_ID")
              [] s.gstate = "PreparingRebalance" ->
                   IF Bug = "sync_in_preparing_rebalance" THEN Park(s0)
                   ELSE IF Bug = "sync_answered_in_preparing_rebalance" THEN ReplySync(s0, c, "NONE")
                   ELSE ReplySync(s0, c, "REBALANCE_IN_PROGRESS")
              [] s.gstate = "CompletingRebalance" ->
                   LET s1 == RemovePendingSyncMember(Park(s0), m) IN
                   IF m # s.leader THEN s1
                   ELSE IF StoreAsync /\ Bug # "sync_acknowledged_not_stored"
                   THEN \* storeGroup; the callback decides (StoreCallback)
                        StoreWrite(s1, Write("Sync", s1.generation, s1.leader, s1.members, P))
                   ELSE \* storeGroup, then setAndPropagateAssignment and transitionTo(Stable)
                        LET s2 == IF Bug = "sync_acknowledged_not_stored" THEN s1
                                  ELSE StoreGroup(s1, [exists |-> TRUE, gen |-> s1.generation,
                                                       leader |-> s1.leader, members |-> s1.members,
                                                       plan |-> P])
                        IN Acknowledged(PropagateAssignment([s2 EXCEPT !.plan = P], s2.members, "NONE"))
              [] OTHER -> \* Stable: return the current assignment
                   LET s1 == RemovePendingSyncMember(s0, m)
                   IN ScheduleHeartbeat(ReplySync(s1, c, "NONE"), m)

(* handleHeartbeat of client c's member id with generation g *)
HeartbeatFor(s, c, g) ==
    LET m == s.cmember[c]
    IN IF ~s.loaded THEN ReplyHeartbeat(s, c, NotLoadedHeartbeatError(s))
       ELSE IF s.gstate # "Dead" /\ StaticCheck(s, c, m) # "NONE" THEN ReplyHeartbeat(s, c, StaticCheck(s, c, m))
       ELSE IF s.gstate = "Dead" \/ m \notin s.members THEN ReplyHeartbeat(s, c, "UNKNOWN_MEMBER_ID")
       ELSE IF g # s.generation THEN ReplyHeartbeat(s, c, "ILLEGAL_GENERATION")
       ELSE CASE s.gstate = "Empty" -> ReplyHeartbeat(s, c, "UNKNOWN_MEMBER_ID")
              [] s.gstate = "PreparingRebalance" ->
                   ReplyHeartbeat(ScheduleHeartbeat(s, m), c, "REBALANCE_IN_PROGRESS")
              [] s.gstate = "Stable" /\ Bug = "heartbeat_rebalances_stable" ->
                   ReplyHeartbeat(MaybePrepareRebalance(ScheduleHeartbeat(s, m), NoMember), c, "REBALANCE_IN_PROGRESS")
              [] s.gstate = "Stable" /\ Bug = "stable_heartbeat_rebalance_in_progress" ->
                   ReplyHeartbeat(ScheduleHeartbeat(s, m), c, "REBALANCE_IN_PROGRESS")
              [] OTHER -> ReplyHeartbeat(ScheduleHeartbeat(s, m), c, "NONE")

(* handleHeartbeat *)
HeartbeatHandler(s, c) == HeartbeatFor(s, c, s.cgen[c])

(* handleLeaveGroup for the client's own member id; the client closes.     *)
LeaveGroupHandler(s, c, nl, jl) ==
    LET m == s.cmember[c]
        s0 == ResetClient(s, c, "Down")
    IN IF ~s0.loaded THEN [s0 EXCEPT !.resp = NotLoadedError(s0)]
       ELSE IF s0.gstate = "Dead" THEN [s0 EXCEPT !.resp = "UNKNOWN_MEMBER_ID"]
       ELSE IF m \in s0.pending
       THEN \* removePendingMemberAndUpdateGroup, then checkAndComplete(MemberKey): the
            \* pending expiration is not completed (the id is no member), so it outlives it.
            LET s1 == [s0 EXCEPT !.pending = @ \ {m}, !.resp = "NONE"]
                s2 == IF Bug = "pending_leave_rebalances" THEN MaybePrepareRebalance(s1, jl)
                      ELSE TryCompleteJoin(s1, jl)
            IN OrphanTimers(CheckMemberKey(s2, m, FALSE), m)
       ELSE IF StaticCheck(s0, c, m) # "NONE" THEN [s0 EXCEPT !.resp = StaticCheck(s0, c, m)]
       ELSE IF m \notin s0.members THEN [s0 EXCEPT !.resp = "UNKNOWN_MEMBER_ID"]
       ELSE LET s1 == RemoveMemberAndUpdateGroup([s0 EXCEPT !.resp = "NONE"], m, nl, jl)
            IN IF Bug = "leave_keeps_session_timer" THEN s1
               ELSE CheckMemberKey(s1, m, FALSE)    \* removeHeartbeatForLeavingMember

(* ---- offset commit -------------------------------------------------- *)
(* ConsumerCoordinator.OffsetCommitResponseHandler: UNKNOWN_MEMBER_ID and  *)
(* ILLEGAL_GENERATION reset the generation (resetGenerationOnResponseError; *)
(* the member id only for UNKNOWN_MEMBER_ID, as for a heartbeat);          *)
(* REBALANCE_IN_PROGRESS: requestRejoin ("offset commit failed since group  *)
(* is already rebalancing"); FENCED_INSTANCE_ID is fatal; NONE and the      *)
(* coordinator errors (retried) change nothing.                           *)
ReplyCommit(s, c, err) ==
    LET s1 == CASE err = "UNKNOWN_MEMBER_ID" -> ResetClient(s, c, "Unjoined")
                [] err = "ILLEGAL_GENERATION" -> ClientLosesGeneration(s, c)
                [] err = "REBALANCE_IN_PROGRESS" -> ClientRejoins(s, c)
                [] err = "FENCED_INSTANCE_ID" -> ResetClient(s, c, "Down")
                [] OTHER -> s
    IN [s1 EXCEPT !.resp = err]

(* GroupCoordinator.handleCommitOffsets / doCommitOffsets /               *)
(* validateOffsetCommit for client c's member id and generation (a        *)
(* consumer's commit, generation >= 0).  No group in the cache: "a request *)
(* coming from an older generation ... reject the commit"                  *)
(* (ILLEGAL_GENERATION).  Otherwise validateCurrentMember (FENCED_INSTANCE_ID, *)
(* UNKNOWN_MEMBER_ID), then the generation; CompletingRebalance answers   *)
(* REBALANCE_IN_PROGRESS (no assignment yet); Stable and                  *)
(* PreparingRebalance store the offsets and                               *)
(* completeAndScheduleNextHeartbeatExpiration ("we rely on heartbeat       *)
(* response to eventually notify the rebalance").  The offset records'    *)
(* own append is not modelled (taken as immediate and successful).        *)
CommitOffsetsHandler(s, c) ==
    LET m == s.cmember[c]
        g == s.cgen[c]
    IN IF ~s.loaded THEN ReplyCommit(s, c, NotLoadedError(s))
       ELSE IF s.gstate = "Dead" THEN ReplyCommit(s, c, "ILLEGAL_GENERATION")
       ELSE IF StaticCheck(s, c, m) # "NONE" THEN ReplyCommit(s, c, StaticCheck(s, c, m))
       ELSE IF m \notin s.members
       THEN IF Bug = "commit_from_unknown_member_accepted" /\ g = s.generation
                 /\ s.gstate \in {"Stable", "PreparingRebalance"}
            THEN ReplyCommit(s, c, "NONE")   \* no MemberMetadata whose session to extend
            ELSE ReplyCommit(s, c, "UNKNOWN_MEMBER_ID")
       ELSE IF g # s.generation THEN ReplyCommit(s, c, "ILLEGAL_GENERATION")
       ELSE IF s.gstate = "CompletingRebalance" THEN ReplyCommit(s, c, "REBALANCE_IN_PROGRESS")
       ELSE ReplyCommit(ScheduleHeartbeat(s, m), c, "NONE")   \* Stable, PreparingRebalance
(* ---- end offset commit ---------------------------------------------- *)

-----------------------------------------------------------------------------
(* Actions: requests, each with the client sending it                      *)

CanRequest(c) == cphase[c] # "Down"

(* handleJoinGroup of an unknown member (member id ""): with              *)
(* requireKnownMemberId (JoinGroup v4+) the member is made pending and     *)
(* told MEMBER_ID_REQUIRED; without it, addMemberAndRebalance.             *)
JoinGroupUnknownMember(c, rk) ==
    /\ cphase[c] = "Unjoined" /\ cmember[c] = NoMember
    /\ LET H(nl, jl) == JoinGroupHandler(Cur, c, rk, FALSE, nl, jl)
       IN RunWithChoices(H, LAMBDA r : LA("JoinGroupUnknownMember", c, NoMember, NoGen, rk, r))

(* handleJoinGroup of a pending member (the MEMBER_ID_REQUIRED flavour's   *)
(* second JoinGroup): doCurrentMemberJoinGroup's isPendingMember branch.   *)
JoinGroupPendingMember(c) ==
    /\ cphase[c] = "Unjoined" /\ cmember[c] # NoMember
    /\ loaded /\ cmember[c] \in pending
    /\ LET H(nl, jl) == JoinGroupHandler(Cur, c, FALSE, FALSE, nl, jl)
       IN RunWithChoices(H, LAMBDA r : LA("JoinGroupPendingMember", c, cmember[c], NoGen, FALSE, r))

(* handleJoinGroup of a known member id (doCurrentMemberJoinGroup); chg:   *)
(* the member's protocol metadata changed (member.matches fails).          *)
JoinGroupKnownMember(c, chg) ==
    /\ cphase[c] = "Unjoined" /\ cmember[c] # NoMember
    /\ ~(loaded /\ cmember[c] \in pending)
    /\ chg => "change" \in ClientFaults
    /\ LET H(nl, jl) == JoinGroupHandler(Cur, c, FALSE, chg, nl, jl)
       IN RunWithChoices(H, LAMBDA r : LA("JoinGroupKnownMember", c, cmember[c], NoGen, chg, r))

(* A client sends SyncGroup once it has its JoinGroup response; with the   *)
(* fault "resync" a Stable client sends it again (its response was lost:  *)
(* doSyncGroup in Stable answers the current assignment again).           *)
SyncPhase(c) ==
    \/ cphase[c] = "Joined"
    \/ cphase[c] = "Stable" /\ "resync" \in ClientFaults

(* handleSyncGroup from the member that believes it leads: it sends the    *)
(* assignment; in CompletingRebalance the group becomes Stable.            *)
SyncGroupLeader(c) ==
    /\ SyncPhase(c) /\ cleader[c]
    /\ LET s == SyncGroupHandler(Cur, c, TRUE)
       IN Commit(s, LA("SyncGroupLeader", c, cmember[c], cgen[c], FALSE, s))

(* handleSyncGroup from a follower: parked until the leader's assignment.  *)
SyncGroupFollower(c) ==
    /\ SyncPhase(c) /\ ~cleader[c]
    /\ LET s == SyncGroupHandler(Cur, c, TRUE)
       IN Commit(s, LA("SyncGroupFollower", c, cmember[c], cgen[c], FALSE, s))

(* handleSyncGroup of a SyncGroup v5+ whose protocol type or name is not   *)
(* the group's (Kafka 3.9 validateSyncGroup: INCONSISTENT_GROUP_PROTOCOL).  *)
(* A Java consumer never sends one (its own protocol type, and the name    *)
(* its JoinGroup answer gave): the sender is a client of another make, the *)
(* fault "bad-protocol", and an INCONSISTENT_GROUP_PROTOCOL answer leaves   *)
(* it as it was (what it does next is its own affair); an error answered   *)
(* before the protocol check reaches it as any SyncGroup's.               *)
SyncGroupInconsistentProtocol(c) ==
    /\ "bad-protocol" \in ClientFaults
    /\ SyncPhase(c)
    /\ LET s == SyncGroupHandler(Cur, c, FALSE)
       IN Commit(s, LA("SyncGroupInconsistentProtocol", c, cmember[c], cgen[c], FALSE, s))

(* handleHeartbeat; the heartbeat thread runs once the client has a        *)
(* generation (COMPLETING_REBALANCE and STABLE).                           *)
Heartbeat(c) ==
    /\ cphase[c] \in {"Joined", "SyncWait", "Stable"}
    /\ LET s == HeartbeatHandler(Cur, c)
       IN Commit(s, LA("Heartbeat", c, cmember[c], cgen[c], FALSE, s))

(* handleLeaveGroup: the consumer closes (and gives up any parked request). *)
LeaveGroup(c) ==
    /\ "leave" \in ClientFaults
    /\ CanRequest(c) /\ cmember[c] # NoMember
    /\ LET H(nl, jl) == LeaveGroupHandler(Cur, c, nl, jl)
       IN RunWithChoices(H, LAMBDA r : LA("LeaveGroup", c, cmember[c], NoGen, FALSE, r))

(* handleLeaveGroup of an identity with member id UNKNOWN_MEMBER_ID and    *)
(* c's group.instance.id: the administrative removal of a static member   *)
(* (KIP-345, Admin.removeMembersFromConsumerGroup): currentStaticMemberId  *)
(* names the member, removeCurrentMemberFromGroup removes it as a         *)
(* LeaveGroup does (removeMemberAndUpdateGroup, then                      *)
(* removeHeartbeatForLeavingMember).  c only names the instance: the      *)
(* request comes from an admin client, and c's consumer is not told (its  *)
(* next request meets UNKNOWN_MEMBER_ID).  An instance id that maps to no *)
(* member is answered UNKNOWN_MEMBER_ID and changes nothing, so it is not *)
(* a step here.                                                            *)
LeaveGroupByInstanceIdHandler(s, I, nl, jl) ==
    LET m == s.staticMembers[I]
        s1 == RemoveMemberAndUpdateGroup([s EXCEPT !.resp = "NONE"], m, nl, jl)
    IN CheckMemberKey(s1, m, FALSE)

LeaveGroupByInstanceId(c) ==
    /\ "admin-leave" \in ClientFaults
    /\ InstanceOf(c) # NoInstance
    /\ loaded /\ gstate # "Dead" /\ staticMembers[InstanceOf(c)] # NoMember
    /\ LET I == InstanceOf(c)
           H(nl, jl) == LeaveGroupByInstanceIdHandler(Cur, I, nl, jl)
       IN RunWithChoices(H, LAMBDA r : LA("LeaveGroupByInstanceId", c, staticMembers[I], NoGen, FALSE, r))

(* handleCommitOffsets: a consumer that holds a generation (its JoinGroup *)
(* answer, or its assignment) commits its offsets with its member id and    *)
(* generation (ConsumerCoordinator.sendOffsetCommitRequest).  CommitPhases: *)
(* the client phases a commit is sent from: "Stable" (it holds its         *)
(* assignment), and in models/commits.cfg and kgc validate also "Joined"   *)
(* (between its JoinGroup and SyncGroup answers: REBALANCE_IN_PROGRESS in   *)
(* CompletingRebalance, after which it rejoins; a third more states in      *)
(* `default`, so left out there).                                           *)
CommitPhases == {"Stable"}
HandleCommitOffsets(c) ==
    /\ cphase[c] \in CommitPhases
    /\ LET s == CommitOffsetsHandler(Cur, c)
       IN Commit(s, LA("HandleCommitOffsets", c, cmember[c], cgen[c], FALSE, s))

-----------------------------------------------------------------------------
(* Actions: timers.  Each fires only the head timer.                       *)

TimerLA(name, r) ==
    LA(name, NoClient, Head(timers).member, Head(timers).gen, FALSE, r)

(* onExpireHeartbeat(isPending = false) *)
ExpireHeartbeat(s, m, nl, jl) ==
    IF s.gstate = "Dead" \/ m \notin s.members \/ HasSatisfied(s, m, FALSE) THEN s
    ELSE RemoveMemberAndUpdateGroup(s, m, nl, jl)

(* DelayedHeartbeat expiry of a member's session timeout *)
SessionTimeoutExpiry ==
    /\ HeadIs("Heartbeat") /\ Head(timers).dur = "session"
    /\ LET H(nl, jl) == ExpireHeartbeat(FireHead(Cur), Head(timers).member, nl, jl)
       IN RunWithChoices(H, LAMBDA r : TimerLA("SessionTimeoutExpiry", r))

(* DelayedHeartbeat expiry of a new member (NewMemberJoinTimeoutMs, set by *)
(* addMemberAndRebalance): a new member still awaiting join is removed.   *)
NewMemberJoinTimeout ==
    /\ HeadIs("Heartbeat") /\ Head(timers).dur = "newMember"
    /\ LET H(nl, jl) == ExpireHeartbeat(FireHead(Cur), Head(timers).member, nl, jl)
       IN RunWithChoices(H, LAMBDA r : TimerLA("NewMemberJoinTimeout", r))

(* DelayedHeartbeat(isPending = true) expiry: removePendingMemberAndUpdateGroup *)
PendingMemberExpiry ==
    /\ HeadIs("Pending")
    /\ LET m == Head(timers).member
           H(nl, jl) == LET s == FireHead(Cur) IN
                        IF s.gstate = "Dead" THEN s
                        ELSE TryCompleteJoin([s EXCEPT !.pending = @ \ {m}], jl)
       IN RunWithChoices(H, LAMBDA r : TimerLA("PendingMemberExpiry", r))

(* DelayedJoin expiry (rebalance timeout): forceComplete -> onCompleteJoin *)
RebalanceTimeout ==
    /\ HeadIs("Join")
    /\ LET H(nl, jl) == LET s == FireHead(Cur) IN
                        IF Bug = "rebalance_timeout_waits_for_all" /\ ~AllJoined(s)
                        THEN AddTimer(s, Tmr("Join", NoMember, s.now + RebalanceTimeoutOf(s), "none",
                                             NoGen, RebalanceTimeoutOf(s), 0))
                        ELSE OnCompleteJoin(s, jl)
       IN RunWithChoices(H, LAMBDA r : TimerLA("RebalanceTimeout", r))

(* InitialDelayedJoin expiry: if members joined meanwhile and time remains, *)
(* wait again (delay min(configured, remaining)), else onCompleteJoin.     *)
InitialDelayedJoin ==
    /\ HeadIs("InitialJoin")
    /\ LET t == Head(timers)
           H(nl, jl) == LET s == FireHead(Cur) IN
                        IF s.newMemberAdded /\ t.remaining # 0
                        THEN LET d == Smaller(InitialDelay, t.remaining) IN
                             AddTimer([s EXCEPT !.newMemberAdded = FALSE],
                                      Tmr("InitialJoin", NoMember, s.now + d, "none", NoGen, d,
                                          Max0(t.remaining - t.delay)))
                        ELSE OnCompleteJoin(s, jl)
       IN RunWithChoices(H, LAMBDA r : TimerLA("InitialDelayedJoin", r))

(* DelayedSync expiry: onExpirePendingSync removes the members that sent   *)
(* no SyncGroup in time and rebalances.                                    *)
DelayedSyncExpiry ==
    /\ HeadIs("Sync")
    /\ LET g == Head(timers).gen
           H(nl, jl) ==
             LET s == FireHead(Cur) IN
             IF g # s.generation \/ s.gstate \notin {"CompletingRebalance", "Stable"}
                \/ s.pendingSync = {}
             THEN s
             ELSE LET M == s.pendingSync
                      s1 == CheckMemberKeys(GroupRemoveSet(s, M, nl), M, FALSE)
                  IN PrepareRebalance(s1, jl)
       IN RunWithChoices(H, LAMBDA r : TimerLA("DelayedSyncExpiry", r))

(* A delayed operation of an unloaded group fires against its Dead         *)
(* GroupMetadata.  DelayedHeartbeat / DelayedSync: nothing.  DelayedJoin:  *)
(* onCompleteJoin removes the old members and calls                        *)
(* heartbeatPurgatory.checkAndComplete(MemberKey) for each, which also     *)
(* reaches the live group's operations under the same keys.               *)
(* InitialDelayedJoin may first wait again (it does not check for Dead).   *)
(* Static members are not removed (notYetRejoinedMembers.filterNot(_      *)
(* .isStaticMember)), so their keys are not checked.                       *)
(* Bug "stale_join_completes_live_group": the DelayedJoin completes the     *)
(* group loaded since (looked up by group id, not the GroupMetadata it      *)
(* holds): onCompleteJoin removes the reloaded members, none of which       *)
(* rejoined, and forms the next generation -- a Stable group goes to Empty  *)
(* (or CompletingRebalance) in one step, by a timer.                        *)
StaleTimerExpiry ==
    /\ timers # <<>> /\ Head(timers).stale
    /\ LET t == Head(timers)
           H(nl, jl) ==
             LET s == FireHead(Cur) IN
             IF t.kind = "InitialJoin" /\ t.nma /\ t.remaining # 0
             THEN LET d == Smaller(InitialDelay, t.remaining) IN
                  AddTimer(s, [Tmr("InitialJoin", NoMember, s.now + d, "none", NoGen, d,
                                   Max0(t.remaining - t.delay))
                               EXCEPT !.stale = TRUE, !.olds = t.olds])
             ELSE IF t.kind = "Join" /\ Bug = "stale_join_completes_live_group" /\ s.loaded
                     /\ s.gstate \in {"Stable", "CompletingRebalance"}
             THEN OnCompleteJoin(s, jl)
             ELSE IF t.kind \in {"Join", "InitialJoin"}
             THEN CheckMemberKeys(s, {m \in t.olds : s.minstance[m] = NoInstance}, FALSE)
             ELSE s
       IN RunWithChoices(H, LAMBDA r : TimerLA("StaleTimerExpiry", r))

AdvanceTime ==
    /\ timers # <<>>
    /\ now + 1 < Head(timers).deadline
    /\ LET s == Advance(Cur, 1) IN Commit(s, LA("AdvanceTime", NoClient, NoMember, NoGen, FALSE, s))

TimerStep ==
    \/ SessionTimeoutExpiry \/ NewMemberJoinTimeout \/ PendingMemberExpiry
    \/ RebalanceTimeout \/ InitialDelayedJoin \/ DelayedSyncExpiry \/ StaleTimerExpiry

Tick == AdvanceTime \/ TimerStep

-----------------------------------------------------------------------------
(* Actions: coordinator failover                                           *)

RECURSIVE AnswerSyncs(_, _, _)
AnswerSyncs(s, ms, err) ==
    IF ms = {} THEN s
    ELSE LET m == Min(ms) IN AnswerSyncs(InvokeSync(s, m, err), ms \ {m}, err)

RECURSIVE AnswerJoins(_, _, _)
AnswerJoins(s, ms, err) ==
    IF ms = {} THEN s
    ELSE LET m == Min(ms) IN AnswerJoins(InvokeJoin(s, m, JoinErr(err, m)), ms \ {m}, err)

(* onGroupUnloaded (onResignation): the group becomes Dead and leaves the  *)
(* cache; parked requests are answered NOT_COORDINATOR; in Stable and      *)
(* CompletingRebalance every member's heartbeat is completed; the          *)
(* DelayedSync is completed.  What is left in the timer becomes stale.     *)
GroupUnload ==
    /\ loaded /\ failovers < MaxFailovers
    /\ LET s == Cur
           s1 == CASE s.gstate = "PreparingRebalance" ->
                        LET a == AnswerJoins(s, s.members, "NOT_COORDINATOR") IN
                        IF s.members = {} /\ s.pending = {}   \* tryCompleteJoin succeeds
                        THEN [a EXCEPT !.timers = SelectSeq(@, LAMBDA t : ~(t.kind = "Join" /\ ~t.stale))]
                        ELSE a
                   [] s.gstate \in {"Stable", "CompletingRebalance"} ->
                        LET b == AnswerSyncs(s, s.members, "NOT_COORDINATOR")
                        IN [b EXCEPT !.timers = SelectSeq(@, LAMBDA t :
                                         ~(t.member \in s.members /\ t.kind \in {"Heartbeat", "Pending"}))]
                   [] OTHER -> s
           s2 == [s1 EXCEPT !.timers = SelectSeq(@, LAMBDA t : ~(t.kind = "Sync" /\ ~t.stale))]  \* removeSyncExpiration
           stale == [i \in DOMAIN s2.timers |->
                       [s2.timers[i] EXCEPT !.stale = TRUE,
                                            !.olds = IF s2.timers[i].stale THEN @ ELSE s.members,
                                            !.nma = IF s2.timers[i].stale THEN @ ELSE s.newMemberAdded]]
           s3 == [s2 EXCEPT !.timers = stale, !.loaded = FALSE, !.gstate = "Dead", !.generation = 0,
                            !.writes = StaleWrites(@),
                            !.leader = NoMember, !.members = {}, !.pending = {}, !.awaitingJoin = {},
                            !.awaitingSync = {}, !.newMembers = {}, !.pendingSync = {}, !.plan = {},
                            !.newMemberAdded = FALSE, !.genLeaders = {}, !.genMembers = {},
                            !.failovers = @ + 1, !.staticMembers = [I \in Instances |-> NoMember],
                            !.protocol = NoProtocol]
       IN Commit(s3, LA("GroupUnload", NoClient, NoMember, NoGen, FALSE, s3))

(* onGroupLoaded (onElection): the group comes back from the store, Stable *)
(* with its members or Empty, every member with a fresh session timeout.   *)
(* A group the store never held stays absent.                              *)
GroupLoad ==
    /\ ~loaded
    /\ LET s == [Cur EXCEPT !.loaded = TRUE, !.loading = FALSE]
           st == s.store
           s1 == [s EXCEPT !.gstate = IF st.members = {} THEN "Empty" ELSE "Stable",
                           !.generation = st.gen, !.leader = st.leader, !.members = st.members,
                           !.plan = st.plan, !.genMembers = st.members,
                           !.staticMembers = s.storeStatic]
           \* The record's protocolName is the vote of the generation it stored: every stored
           \* member's client lists it, and a member's list since is its client's or, after a
           \* reload, that protocol alone, so the vote over the stored members gives it again.
           \* Each member comes back supporting that one protocol: the record keeps only its
           \* subscription to it (GroupMetadataManager.readGroupMessageValue:
           \* new MemberMetadata(..., List((protocol, subscription)))).
           prot == IF st.members = {} THEN NoProtocol ELSE SelectProtocol(s1)
           s1p == [s1 EXCEPT !.protocol = prot,
                             !.mprotocols = [m \in MemberIds |-> IF m \in st.members THEN <<prot>> ELSE @[m]]]
           s2 == IF Cardinality(st.members) > MaxGroupSize THEN PrepareRebalance(s1p, NoMember) ELSE s1p
           s3 == IF st.exists THEN ScheduleAll(s2, st.members) ELSE s
       IN Commit(s3, LA("GroupLoad", NoClient, NoMember, NoGen, FALSE, s3))

(* ---- group store: the callback ---------------------------------------- *)
(* The oldest queued append is acknowledged (appendForGroup's callback)    *)
(* with append error e, "NONE" for success; a success is the record a load *)
(* reads from then on.  Sync: doSyncGroup's storeGroup callback acts only  *)
(* if the group is "still in the CompletingRebalance state and the same    *)
(* generation" (the same GroupMetadata, so not after an unload): on an     *)
(* error resetAndPropagateAssignmentError(group, error) (every parked      *)
(* SyncGroup answered with it) and maybePrepareRebalance; on success       *)
(* setAndPropagateAssignment and transitionTo(Stable).  Empty: the         *)
(* callback of onCompleteJoin only logs a failure.  Static: the callback   *)
(* of updateStaticMemberAndRebalance (StaticStored).                       *)
StoreCallbackHandler(s, e, jl) ==
    LET w == Head(s.writes)
        err == CoordinatorErrorFor(e)
        s0 == [s EXCEPT !.writes = Tail(@), !.resp = err]
        s1 == IF err = "NONE"
              THEN StoreGroup(s0, [exists |-> TRUE, gen |-> w.gen, leader |-> w.leader,
                                   members |-> w.members, plan |-> w.plan])
              ELSE s0
        current == /\ w.kind = "Sync" /\ ~w.stale /\ s1.loaded
                   /\ s1.gstate = "CompletingRebalance" /\ s1.generation = w.gen
    IN IF w.kind = "Static" THEN StaticStored(s1, w, err)
       ELSE IF ~current THEN s1
       ELSE IF err = "NONE"
       THEN Acknowledged(PropagateAssignment([s1 EXCEPT !.plan = w.plan], s1.members, "NONE"))
       ELSE MaybePrepareRebalance(PropagateAssignment([s1 EXCEPT !.plan = {}], s1.members, err), jl)

StoreCallback(e) ==
    /\ writes # <<>>
    /\ LET H(nl, jl) == StoreCallbackHandler(Cur, e, jl)
       IN RunWithChoices(H, LAMBDA r : LA("StoreCallback", NoClient, NoMember, Head(writes).gen, FALSE, r))

(* Any outcome the model allows (the trace module's StoreCallback step:    *)
(* the recorded resp tells the outcomes apart).                            *)
StoreCallbackAny == \E e \in StoreOutcomes : StoreCallback(e)
(* ---- end group store: the callback ------------------------------------- *)

(* ---- loading window: the steps ----------------------------------------- *)
(* LoadWindow = TRUE (a model's .cfg, and kgc validate) lets a load take   *)
(* time: onElection -> scheduleLoadGroupAndOffsets puts the partition in   *)
(* loadingPartitions (LoadBegin) until the load ends (GroupLoad) or the    *)
(* coordinator resigns first (onResignation -> removeGroupsAndOffsets      *)
(* drops it from loadingPartitions: GroupUnloadDuringLoad; the group never *)
(* entered the cache).  Without it, GroupLoad is immediate as before.      *)
LoadWindow == FALSE

LoadBegin ==
    /\ LoadWindow /\ ~loaded /\ ~loading
    /\ LET s == [Cur EXCEPT !.loading = TRUE]
       IN Commit(s, LA("LoadBegin", NoClient, NoMember, NoGen, FALSE, s))

GroupUnloadDuringLoad ==
    /\ loading
    /\ LET s == [Cur EXCEPT !.loading = FALSE]
       IN Commit(s, LA("GroupUnloadDuringLoad", NoClient, NoMember, NoGen, FALSE, s))
(* ---- end loading window: the steps ------------------------------------- *)

-----------------------------------------------------------------------------
(* Actions: the clients' own events                                        *)

(* The consumer process dies: no LeaveGroup; its parked requests stay.     *)
ClientCrash(c) ==
    /\ "crash" \in ClientFaults /\ cphase[c] # "Down"
    /\ LET s == ResetClient(Cur, c, "Down")
       IN Commit(s, LA("ClientCrash", c, cmember[c], NoGen, FALSE, s))

(* A new consumer process starts, with no member id. *)
ClientRestart(c) ==
    /\ cphase[c] = "Down"
    /\ LET s == [Cur EXCEPT !.cphase[c] = "Unjoined"]
       IN Commit(s, LA("ClientRestart", c, NoMember, NoGen, FALSE, s))

(* The client gives up on a parked JoinGroup or SyncGroup (request timeout *)
(* or disconnect) and will retry; it never learnt an id it was given.      *)
ClientAbandon(c) ==
    /\ "abandon" \in ClientFaults /\ cphase[c] \in {"JoinWait", "SyncWait"}
    /\ LET s == ClientRejoins(Cur, c)
       IN Commit(s, LA("ClientAbandon", c, cwait[c], NoGen, FALSE, s))

(* Model bound: a client that needs a fresh member id when none is left   *)
(* gives up (it may restart later).  Keeps bounded models free of          *)
(* deadlocks (TLC 2.15 has no CHECK_DEADLOCK).                             *)
NoIdLeft(c) ==
    /\ cphase[c] = "Unjoined" /\ cmember[c] = NoMember
    /\ NewId(Cur) = NoMember
    /\ LET s == ResetClient(Cur, c, "Down")
       IN Commit(s, LA("NoIdLeft", c, NoMember, NoGen, FALSE, s))

(* A client decides to rejoin (subscription or metadata change): a Stable *)
(* one ("rejoin"), or ("early-rejoin") one holding its JoinGroup response *)
(* that sends JoinGroup again instead of SyncGroup (a client other than   *)
(* Kafka's AbstractCoordinator, which chains SyncGroup onto the response, *)
(* may).                                                                   *)
ClientRejoin(c) ==
    /\ \/ "rejoin" \in ClientFaults /\ cphase[c] = "Stable"
       \/ "early-rejoin" \in ClientFaults /\ cphase[c] = "Joined"
    /\ LET s == ClientRejoins(Cur, c)
       IN Commit(s, LA("ClientRejoin", c, cmember[c], cgen[c], FALSE, s))

(* ---- stale heartbeat ---------------------------------------------------- *)
(* Fault "stale-heartbeat": a HeartbeatRequest sent with the generation   *)
(* the client held before it dropped it for a rejoin (a SyncGroup or       *)
(* Heartbeat answered REBALANCE_IN_PROGRESS, ClientRejoin) reaches the     *)
(* coordinator only now; cur: that generation is still the group's (else  *)
(* an older one, which handleHeartbeat answers ILLEGAL_GENERATION whatever *)
(* its value).  The coordinator handles it as any heartbeat (a current     *)
(* member's session is rescheduled); the client ignores the response:      *)
(* AbstractCoordinator.HeartbeatResponseHandler acts on UNKNOWN_MEMBER_ID  *)
(* / ILLEGAL_GENERATION only "if (generationUnchanged())", and on          *)
(* REBALANCE_IN_PROGRESS only while STABLE; it is rejoining with           *)
(* generation -1.                                                          *)
KeepClient(s, c) ==
    [s EXCEPT !.cphase[c] = cphase[c], !.cmember[c] = cmember[c], !.cgen[c] = cgen[c],
              !.cleader[c] = cleader[c], !.cmembers[c] = cmembers[c], !.cassign[c] = cassign[c],
              !.cwait[c] = cwait[c]]

StaleHeartbeat(c, cur) ==
    /\ "stale-heartbeat" \in ClientFaults
    /\ cphase[c] = "Unjoined" /\ cmember[c] # NoMember
    /\ generation >= 1
    /\ LET g == IF cur THEN generation ELSE IF Normalize THEN 0 ELSE generation - 1
           s == KeepClient(HeartbeatFor(Cur, c, g), c)
       IN Commit(s, LA("StaleHeartbeat", c, cmember[c], g, cur, s))
(* ---- end stale heartbeat ------------------------------------------------ *)

-----------------------------------------------------------------------------
Init ==
    /\ now = 0 /\ timers = <<>> /\ loaded = TRUE /\ gstate = "Dead" /\ generation = 0
    /\ leader = NoMember /\ members = {} /\ pending = {} /\ awaitingJoin = {}
    /\ awaitingSync = {} /\ newMembers = {} /\ pendingSync = {} /\ plan = {}
    /\ newMemberAdded = FALSE /\ mtimeouts = [m \in MemberIds |-> DefaultTimeouts]
    /\ nextId = 1 /\ store = NoStore /\ failovers = 0
    /\ cphase = [c \in Clients |-> "Unjoined"] /\ cmember = [c \in Clients |-> NoMember]
    /\ cgen = [c \in Clients |-> NoGen] /\ cleader = [c \in Clients |-> FALSE]
    /\ cmembers = [c \in Clients |-> {}] /\ cassign = [c \in Clients |-> {}]
    /\ cwait = [c \in Clients |-> NoMember]
    /\ genLeaders = {} /\ genMembers = {} /\ leaderLog = {} /\ ackLog = {}
    /\ writes = <<>>
    /\ staticMembers = [I \in Instances |-> NoMember]
    /\ minstance = [m \in MemberIds |-> NoInstance]
    /\ storeStatic = [I \in Instances |-> NoMember]
    /\ loading = FALSE
    /\ protocol = NoProtocol
    /\ mprotocols = [m \in MemberIds |-> DefaultProtocols]
    /\ lastAction = [name |-> "Init", client |-> NoClient, member |-> NoMember, gen |-> NoGen,
                     flag |-> FALSE, newMember |-> NoMember, resp |-> "NONE", dt |-> 0]

ClientStep(c) ==
    \/ \E rk \in (IF InstanceOf(c) = NoInstance THEN JoinFlavours ELSE StaticSkipAssignment) :
         JoinGroupUnknownMember(c, rk)
    \/ JoinGroupPendingMember(c)
    \/ JoinGroupKnownMember(c, FALSE)
    \/ SyncGroupLeader(c) \/ SyncGroupFollower(c) \/ Heartbeat(c)
    \/ ClientRestart(c) \/ NoIdLeft(c)

Disturb(c) ==
    \/ JoinGroupKnownMember(c, TRUE) \/ LeaveGroup(c)
    \/ ClientCrash(c) \/ ClientAbandon(c) \/ ClientRejoin(c)
    \/ \E cur \in BOOLEAN : StaleHeartbeat(c, cur)
    \/ LeaveGroupByInstanceId(c)
    \/ HandleCommitOffsets(c)
    \/ SyncGroupInconsistentProtocol(c)

Next ==
    \/ \E c \in Clients : ClientStep(c) \/ Disturb(c)
    \/ Tick
    \/ GroupUnload \/ GroupLoad
    \/ StoreCallbackAny
    \/ LoadBegin \/ GroupUnloadDuringLoad

Spec == Init /\ [][Next]_vars

(* Which kind of step a transition was, read off lastAction' (cheap to    *)
(* evaluate; TLC evaluates ENABLED without caching, which is ruinous for  *)
(* steps written as chains of LET definitions).                           *)
TickNames == {"AdvanceTime", "SessionTimeoutExpiry", "NewMemberJoinTimeout",
              "PendingMemberExpiry", "RebalanceTimeout", "InitialDelayedJoin",
              "DelayedSyncExpiry", "StaleTimerExpiry"}
ClientStepNames == {"JoinGroupUnknownMember", "JoinGroupPendingMember", "JoinGroupKnownMember",
                    "SyncGroupLeader", "SyncGroupFollower", "Heartbeat", "ClientRestart",
                    "NoIdLeft"}
TickStep == lastAction'.name \in TickNames
ClientStepBy(c) == lastAction'.client = c /\ lastAction'.name \in ClientStepNames
                   /\ ~(lastAction'.name = "JoinGroupKnownMember" /\ lastAction'.flag)
(* An OffsetCommit counts as a disturbance: the protocol needs none to make *)
(* progress, and one answered REBALANCE_IN_PROGRESS makes its client rejoin *)
(* (a client committing for ever between JoinGroup and SyncGroup would keep *)
(* a rebalance from completing), so a prompt client eventually stops.      *)
DisturbStep == \/ lastAction'.name \in {"LeaveGroup", "ClientCrash", "ClientAbandon", "ClientRejoin", "NoIdLeft",
                                        "HandleCommitOffsets", "SyncGroupInconsistentProtocol"}
               \/ lastAction'.name = "JoinGroupKnownMember" /\ lastAction'.flag

(* Time is fair and not Zeno: while timers are live, the clock advances   *)
(* again and again (so every live timer fires or is cancelled).  This     *)
(* implies weak fairness of Tick, which is enabled exactly while a timer   *)
(* is live, and rules out behaviours doing infinitely much in no time     *)
(* (e.g. a member joining and leaving for ever while a rebalance timeout  *)
(* of 0 keeps firing ahead of every other timer).                         *)
TimeFair == []<>(timers = <<>>) \/ []<><<lastAction'.dt > 0>>_vars

(* Spec, fair to time only: clients may crash, stop, or keep heartbeating. *)
FairSpec == Spec /\ TimeFair

(* Model plumbing (bounds, views, symmetry) is in MCGroupCoordinator.tla. *)

-----------------------------------------------------------------------------
(* Properties                                                              *)

Live == loaded /\ gstate # "Dead"
Ids == MemberIds \cup {NoMember}
Gens == {NoGen} \cup Nat
TimerRec == [kind : TimerKinds, member : Ids, deadline : Int, dur : {"session", "newMember", "none"},
             gen : Gens, delay : Nat, remaining : Nat, stale : BOOLEAN, orphan : BOOLEAN,
             olds : SUBSET MemberIds, nma : BOOLEAN]

TypeOK ==
    /\ now \in Nat
    /\ timers \in Seq(TimerRec)
    /\ loaded \in BOOLEAN
    /\ gstate \in GroupStates
    /\ generation \in Nat
    /\ leader \in Ids
    /\ members \subseteq MemberIds /\ pending \subseteq MemberIds
    /\ awaitingJoin \subseteq members /\ awaitingSync \subseteq members
    /\ newMembers \subseteq members
    /\ pendingSync \subseteq members \cup {m \in MemberIds : minstance[m] # NoInstance}
    /\ members \cap pending = {}
    /\ plan \subseteq MemberIds
    /\ newMemberAdded \in BOOLEAN
    /\ mtimeouts \in [MemberIds -> Nat \X Nat]
    /\ nextId \in 1..(NumIds + 1)
    /\ store \in [exists : BOOLEAN, gen : Gens, leader : Ids, members : SUBSET MemberIds,
                  plan : SUBSET MemberIds]
    /\ failovers \in 0..MaxFailovers
    /\ cphase \in [Clients -> Phases]
    /\ cmember \in [Clients -> Ids] /\ cgen \in [Clients -> Gens]
    /\ cleader \in [Clients -> BOOLEAN]
    /\ cmembers \in [Clients -> SUBSET MemberIds] /\ cassign \in [Clients -> SUBSET MemberIds]
    /\ cwait \in [Clients -> Ids]
    /\ genLeaders \subseteq MemberIds /\ genMembers \subseteq MemberIds
    /\ leaderLog \subseteq Nat \X MemberIds
    /\ ackLog \subseteq Nat \X MemberIds
    /\ writes \in Seq([kind : {"Sync", "Empty", "Static"}, gen : Gens, leader : Ids, members : SUBSET MemberIds,
                       plan : SUBSET MemberIds, stale : BOOLEAN, member : Ids, old : Ids, obj : Ids,
                       skip : BOOLEAN, cleader : Ids, open : BOOLEAN])
    /\ StoreAsync \/ writes = <<>>
    /\ loading \in BOOLEAN /\ (loading => ~loaded)
    /\ lastAction.client \in Clients \cup {NoClient}
    /\ staticMembers \in [Instances -> Ids] /\ storeStatic \in [Instances -> Ids]
    /\ minstance \in [MemberIds -> Instances \cup {NoInstance}]
    /\ protocol \in Names(ProtocolOrder) \cup {NoProtocol}
    /\ mprotocols \in [MemberIds -> Seq(Names(ProtocolOrder))]

(* Timers are ordered and none is overdue. *)
TimersOrdered ==
    /\ \A i \in 1..(Len(timers) - 1) : timers[i].deadline <= timers[i + 1].deadline
    /\ \A i \in DOMAIN timers : timers[i].deadline >= now

(* No two members are ever named leader, each in a successful JoinGroup    *)
(* response to itself, for the same generation (of one group incarnation); *)
(* and once a generation is formed, a current member's client believes it  *)
(* leads exactly when the coordinator names it -- except that a static     *)
(* leader rejoining a Stable group before JoinGroup v9 is told the old     *)
(* leader id on purpose (updateStaticMemberAndRebalance) and acts as a     *)
(* follower.                                                               *)
SingleLeaderPerGeneration ==
    /\ Cardinality(genLeaders) <= 1
    /\ (Live /\ gstate \in {"CompletingRebalance", "Stable"}) =>
         /\ genLeaders \subseteq {leader}
         /\ \A c \in Clients :
              (cphase[c] \in {"Joined", "SyncWait", "Stable"} /\ cmember[c] \in members
               /\ cgen[c] = generation)
                 => /\ cleader[c] => cmember[c] = leader
                    /\ cmember[c] = leader => (cleader[c] \/ (InstanceOf(c) # NoInstance /\ gstate = "Stable"))

(* SingleLeaderPerGeneration's first half across coordinator failovers.   *)
(* Kafka 3.x breaks it: a generation is written to __consumer_offsets only *)
(* by the leader's SyncGroup (or on becoming Empty), so after an unload in *)
(* CompletingRebalance the group comes back at the previous generation and *)
(* forms the lost generation's number again, possibly with another leader. *)
(* Checked by models/finding_generation_reuse.cfg (expected to fail).      *)
GenerationLeaderUniqueAcrossFailovers ==
    \A p, q \in leaderLog : p[1] = q[1] => p[2] = q[2]

(* What Kafka 3.x does keep of it: once a generation's leader SyncGroup is *)
(* answered as stored (ackLog: doSyncGroup's storeGroup callback with      *)
(* Errors.NONE on the live GroupMetadata), no JoinGroup response names     *)
(* another leader for that generation, in this incarnation or any later    *)
(* one -- a reload reads that record or a newer one (onGroupLoaded), and   *)
(* the generation only grows from there.  The reuse of a generation whose  *)
(* write was never acknowledged (the parked SyncGroups were answered       *)
(* NOT_COORDINATOR by onGroupUnloaded, or the append's callback landed on  *)
(* the Dead GroupMetadata) is the finding above, not a violation: the      *)
(* leader named before the acknowledgement is not checked.  An action      *)
(* property, because "before" is what it needs: the naming steps are read *)
(* (leaderLog' \ leaderLog) against every acknowledgement so far.  A      *)
(* static leader is its group.instance.id: replaceStaticMember hands the   *)
(* leadership to the instance's new member id ("if (isLeader(oldMemberId)) *)
(* leaderId = newMemberId"), and a reload brings back the stored id, which *)
(* the next static rejoin replaces again (kgc hunt found such a chain:     *)
(* ids 7, 10, back to 7 after the reload, then 12, all one instance), so   *)
(* two ids of one instance are one leader.                                 *)
SameLeader(m, a) == m = a \/ (minstance'[m] # NoInstance /\ minstance'[m] = minstance'[a])
AcknowledgedGenerationLeaderUnique ==
    [][\A p \in leaderLog' \ leaderLog, a \in ackLog' : p[1] = a[1] => SameLeader(p[2], a[2])]_vars

(* No SyncGroup succeeds or is parked while the group prepares a rebalance: *)
(* doSyncGroup answers REBALANCE_IN_PROGRESS in PreparingRebalance, and     *)
(* prepareRebalance answers every parked SyncGroup of a CompletingRebalance *)
(* group with REBALANCE_IN_PROGRESS (resetAndPropagateAssignmentError).     *)
(* An action property, so that the answer of the step is read (lastAction'.*)
(* resp: "NONE" is success, "PARKED" accepted for later) on every          *)
(* transition TLC takes, not only on states new under the VIEW.  Liveness  *)
(* models (Normalize) keep no resp: there only the parked half is checked. *)
SyncSteps == {"SyncGroupLeader", "SyncGroupFollower"}
NoSyncInPreparingRebalance ==
    [][/\ (Live /\ gstate = "PreparingRebalance" /\ lastAction'.name \in SyncSteps)
            => lastAction'.resp \notin {"NONE", "PARKED"}
       /\ (Live' /\ gstate' = "PreparingRebalance")
            => /\ awaitingSync' = {}
               /\ \A c \in Clients : cphase'[c] # "SyncWait"
      ]_vars

(* Within one group incarnation the generation never decreases.           *)
GenerationMonotonic == [][(loaded /\ loaded') => generation' >= generation]_<<generation, loaded>>

LeaderIsMember ==
    Live => /\ (leader = NoMember <=> members = {})
            /\ (leader # NoMember => leader \in members)

(* Empty exactly when there are no members and no rebalance is under way  *)
(* (a PreparingRebalance group can have none while its DelayedJoin or     *)
(* InitialDelayedJoin is pending, e.g. after its last member left).       *)
EmptyIffNoMembers ==
    Live => ((gstate = "Empty") <=>
               (members = {} /\ ~\E i \in DOMAIN timers : timers[i].kind \in {"Join", "InitialJoin"}
                                                         /\ ~timers[i].stale))

(* group.max.size, counted as Kafka counts: pending members are no members; *)
(* a rebalancing group may exceed it until non-rejoined members go.       *)
(* Static members are not counted in the second half: onCompleteJoin keeps *)
(* static members that did not rejoin, which acceptJoiningMember never     *)
(* counted, so with them Kafka's group exceeds group.max.size (models/     *)
(* static.cfg found it; with no static client the property is unchanged).  *)
GroupSizeBounded ==
    Live => /\ Cardinality(awaitingJoin) <= MaxGroupSize
            /\ gstate \in {"CompletingRebalance", "Stable"} =>
                 Cardinality({m \in members : minstance[m] = NoInstance}) <= MaxGroupSize

(* The assignment installed for a generation covers exactly the members   *)
(* the generation was formed with (the list its leader was handed), and   *)
(* every current member's client that synced holds it.                    *)
AssignmentMatchesGenerationMembers ==
    (Live /\ gstate = "Stable") =>
        /\ plan = genMembers
        /\ genMembers = members
        /\ \A c \in Clients : (cphase[c] = "Stable" /\ cmember[c] \in members /\ cgen[c] = generation)
                                => cassign[c] = plan

(* Every client waiting on a parked JoinGroup/SyncGroup has that request  *)
(* parked in the live group, so it will be answered; a parked request is  *)
(* answered (and forgotten) once; no two clients wait on one callback.    *)
(* A request a client gave up on is superseded, not awaited.  A static    *)
(* rejoin parked in a Stable group that was unloaded waits on its append's *)
(* callback instead (onGroupUnloaded answers no JoinGroup in Stable).      *)
(* A JoinGroup parked in a Stable group is a static rejoin whose append is *)
(* in flight (updateStaticMemberAndRebalance): any other would have started *)
(* a rebalance, and the append's callback answers it -- on an error after   *)
(* updateMember(..., null) dropped it from the member, which otherwise      *)
(* holds a callback already answered, to be invoked again.                  *)
ParkedRequestAnsweredOnce ==
    /\ (Live /\ gstate = "Stable") =>
          \A m \in awaitingJoin :
             \E i \in DOMAIN writes : writes[i].kind = "Static" /\ ~writes[i].stale /\ writes[i].obj = m
    /\ \A c \in Clients : cphase[c] = "JoinWait" =>
          \/ Live /\ cwait[c] \in awaitingJoin
          \/ \E i \in DOMAIN writes : writes[i].stale /\ writes[i].open /\ writes[i].member = cwait[c]
    /\ \A c \in Clients : cphase[c] = "SyncWait" => (Live /\ cwait[c] \in awaitingSync)
    /\ \A c \in Clients : (cphase[c] \in {"JoinWait", "SyncWait"}) <=> (cwait[c] # NoMember)
    /\ \A c, d \in Clients : (c # d /\ cwait[c] # NoMember /\ cphase[c] = cphase[d]) => cwait[c] # cwait[d]

LiveTimersOf(kind, m) ==
    {i \in DOMAIN timers : timers[i].kind = kind /\ timers[i].member = m
                           /\ ~timers[i].stale /\ ~timers[i].orphan}

(* Every member not awaiting a join or sync response has exactly one live *)
(* session timer (members awaiting one may have none: hasSatisfiedHeartbeat), *)
(* and no session timer outlives its member; every pending member has     *)
(* exactly one expiration, and none outlives its pending member.  Timers  *)
(* Kafka leaves behind on purpose (stale, orphan) fire without effect.     *)
OneSessionTimerPerMember ==
    /\ Live =>
         /\ \A m \in members \ (awaitingJoin \cup awaitingSync) : Cardinality(LiveTimersOf("Heartbeat", m)) = 1
         /\ \A m \in members : Cardinality(LiveTimersOf("Heartbeat", m)) <= 1
         /\ \A m \in pending : Cardinality(LiveTimersOf("Pending", m)) = 1
         /\ \A i \in DOMAIN timers :
              (~timers[i].stale /\ ~timers[i].orphan) =>
                 /\ timers[i].kind = "Heartbeat" => timers[i].member \in members
                 /\ timers[i].kind = "Pending" => timers[i].member \in pending
    /\ ~Live => \A i \in DOMAIN timers : timers[i].stale

(* A Stable group starts a rebalance only for the reasons Kafka 3.x has,   *)
(* each a handler that calls maybePrepareRebalance on a Stable group:      *)
(*  - JoinGroup of a new member: doDynamicNewMemberJoinGroup (no           *)
(*    requireKnownMemberId) or a pending member's second JoinGroup, both   *)
(*    addMemberAndRebalance; a static member's JoinGroup with member id "" *)
(*    whose protocols change the selection (updateStaticMemberAndRebalance) *)
(*    has its new id in members' too;                                      *)
(*  - JoinGroup of a current member that leads or whose metadata changed   *)
(*    (its bytes, or its protocol names: a reloaded member keeps only the   *)
(*    group's protocol):                                                   *)
(*    doCurrentMemberJoinGroup's Stable case, updateMemberAndRebalance (a   *)
(*    follower with unchanged metadata gets the current assignment);       *)
(*  - LeaveGroup of a current member: removeMemberAndUpdateGroup;           *)
(*  - a current member's session (or new-member join) timeout:             *)
(*    onExpireHeartbeat -> removeMemberAndUpdateGroup;                      *)
(*  - DelayedSync expiry with current members that never synced:           *)
(*    onExpireSyncGroup -> removeMemberAndUpdateGroup (KAFKA-13766).        *)
(* (A static member's old id, replaced in Stable, stays in               *)
(* pendingSyncMembers: Kafka's expiry then rebalances for it too.)          *)
(* Heartbeat, SyncGroup, a pending member's LeaveGroup or expiry and the    *)
(* group's own timers never rebalance a Stable group.  A rebalance may be  *)
(* prepared and completed in one step (prepareRebalance's                  *)
(* tryCompleteElseWatch completes at once when every member has already    *)
(* rejoined): the step then ends in CompletingRebalance or Empty with the  *)
(* next generation (initNextGeneration), which no other step from Stable   *)
(* does, and is held to the same triggers.                                 *)
StableRebalanceStarted ==
    Live /\ gstate = "Stable" /\ (gstate' = "PreparingRebalance" \/ (Live' /\ generation' # generation))

StableRebalanceOnlyByTrigger ==
    [][StableRebalanceStarted =>
         LET la == lastAction' IN
         \/ la.name = "JoinGroupUnknownMember" /\ la.newMember \in members'
         \/ la.name = "JoinGroupPendingMember" /\ la.member \in pending /\ la.member \in members'
         \/ la.name = "JoinGroupKnownMember" /\ la.member \in members
              /\ (la.member = leader \/ la.flag \/ mprotocols[la.member] # mprotocols'[la.member])
         \/ la.name \in {"LeaveGroup", "LeaveGroupByInstanceId", "SessionTimeoutExpiry", "NewMemberJoinTimeout"}
              /\ la.member \in members /\ la.member \notin members'
         \/ la.name = "DelayedSyncExpiry" /\ pendingSync # {}
              /\ \A m \in pendingSync \ members : minstance[m] # NoInstance
      ]_vars

(* No commit accepted from a member outside the current generation: what   *)
(* generations exist to protect (a member that was removed, or that has not *)
(* rejoined, must not overwrite the offsets of partitions now assigned to   *)
(* another).  An action property on the step's answer: an OffsetCommit      *)
(* answered NONE names a member of the group and the group's generation     *)
(* (read in the state it was handled in).  Liveness models (Normalize) keep *)
(* no resp.                                                                 *)
NoCommitOutsideCurrentGeneration ==
    [][(lastAction'.name = "HandleCommitOffsets" /\ lastAction'.resp = "NONE") =>
         /\ Live
         /\ lastAction'.member \in members
         /\ lastAction'.gen = generation
      ]_vars

(* ---- static membership properties ----                                  *)

(* One owner per instance id: the group holds at most one member per       *)
(* group.instance.id, and staticMembers names it (GroupMetadata.add,       *)
(* replaceStaticMember, remove keep the two in step).                      *)
OneOwnerPerInstanceId ==
    Live =>
        \A I \in Instances :
            /\ {m \in members : minstance[m] = I} \subseteq {staticMembers[I]}
            /\ staticMembers[I] # NoMember => (staticMembers[I] \in members /\ minstance[staticMembers[I]] = I)

(* A member id handed to a client survives a reload: a reload restores     *)
(* exactly the store (onGroupLoaded), so every member of the Stable,       *)
(* stored generation that a client holds (after a JoinGroup answer) must   *)
(* be in the store, with its instance id -- the reason                     *)
(* updateStaticMemberAndRebalance stores the group in Stable.  Holds       *)
(* trivially without failovers (nothing is stored).                        *)
MemberIdSurvivesReload ==
    (MaxFailovers > 0 /\ Live /\ gstate = "Stable" /\ store.exists /\ store.gen = generation) =>
        \A c \in Clients :
            (cphase[c] \in {"Joined", "SyncWait", "Stable"} /\ cmember[c] \in members /\ cgen[c] = generation)
                => /\ cmember[c] \in store.members
                   /\ minstance[cmember[c]] # NoInstance => storeStatic[minstance[cmember[c]]] = cmember[c]

(* ---- protocol selection properties ----                                  *)

(* The group's protocol is one every member supports: the leader runs that *)
(* assignor and every member must decode its assignment.  selectProtocol   *)
(* votes among candidateProtocols, supportsProtocols turns away a member   *)
(* with no protocol in common (INCONSISTENT_GROUP_PROTOCOL), and a static  *)
(* member replaced in Stable whose protocols would change the selection    *)
(* makes the group rebalance (updateStaticMemberAndRebalance).             *)
SelectedProtocolSupportedByAllMembers ==
    (Live /\ gstate \in {"CompletingRebalance", "Stable"}) =>
        /\ protocol # NoProtocol
        /\ \A m \in members : protocol \in Names(mprotocols[m])

-----------------------------------------------------------------------------
(* Liveness (no failover: MaxFailovers = 0; checked with Normalize).       *)
(* FairSpec is fair only to time (Tick); clients may crash, stop or keep   *)
(* heartbeating for ever.                                                  *)

RebalanceCompletes ==
    (gstate = "PreparingRebalance") ~> (gstate \in {"CompletingRebalance", "Empty"})

(* A rebalance that needs nobody to rejoin completes inside the step that *)
(* starts it: a CompletingRebalance group whose last member goes becomes  *)
(* Empty in one step, so Empty counts as leaving CompletingRebalance too. *)
(* (A lone member rejoining with changed metadata takes the group from    *)
(* one generation's CompletingRebalance to the next's in one step, which  *)
(* a state formula cannot tell from staying: liveness models leave the    *)
(* "change" fault out.)                                                   *)
SyncCompletes ==
    (gstate = "CompletingRebalance") ~> (gstate \in {"Stable", "PreparingRebalance", "Empty"})

(* A request with member id m, or the JoinGroup that was given m.         *)
SentBy(m) == lastAction'.client # NoClient /\ (lastAction'.member = m \/ lastAction'.newMember = m)

(* A member (or pending member) that eventually sends no more requests is  *)
(* eventually removed for good.                                            *)
SilentMemberRemoved ==
    \A m \in MemberIds :
        (<>[][~SentBy(m)]_vars) => <>[](m \notin members \cup pending)

(* A client has something to do before time may pass, if it is prompt:   *)
(* restart, join or sync.                                                  *)
ClientsBusy == \E c \in Clients : cphase[c] \in {"Down", "Unjoined", "Joined"}

(* A session timeout fires for a member whose client is alive and          *)
(* heartbeating: that client was not prompt.                               *)
SlowHeartbeat ==
    /\ lastAction'.name = "SessionTimeoutExpiry"
    /\ \E c \in Clients : cphase[c] \in {"Joined", "SyncWait", "Stable"} /\ cmember[c] = lastAction'.member

(* ClientStep(c) is enabled in every phase but JoinWait (NoIdLeft covers  *)
(* a client that needs an id when none is left).                          *)
ClientFair(c) == []<>(cphase[c] = "JoinWait") \/ []<><<ClientStepBy(c)>>_vars

(* Every client alive and prompt: eventually no more disturbances (crash,  *)
(* leave, abandon, rejoin, metadata change, and no client left without a   *)
(* member id by the model's id bound), time passes only while no           *)
(* client has a request to send, and no live client misses a heartbeat;   *)
(* every client's protocol steps are fair.                                 *)
Prompt ==
    /\ <>[][~DisturbStep /\ ~(TickStep /\ ClientsBusy) /\ ~SlowHeartbeat]_vars
    /\ \A c \in Clients : ClientFair(c)

EventuallyStable == Prompt => <>[](gstate = "Stable")
=============================================================================
