package kgc.reference;

import java.util.PriorityQueue;
import java.util.function.Predicate;
import org.apache.kafka.server.util.timer.Timer;
import org.apache.kafka.server.util.timer.TimerTask;
import org.apache.kafka.server.util.timer.TimerTaskEntry;

/**
 * The purgatories' timer on a virtual clock. Like Kafka's MockTimer (server-common tests) it keeps
 * the tasks in deadline order, but it moves the clock to each task's deadline before running it
 * (ties in creation order), which is the scenario contract's Time rule: a timer created by a firing
 * timer counts from the deadline of the one that fired. Kafka's MockTimer sleeps the whole advance
 * first; the difference only shows when a firing task schedules another.
 */
final class VirtualTimer implements Timer {
    private record Entry(TimerTaskEntry entry, long seq) {}

    final VirtualTime time = new VirtualTime();
    private final PriorityQueue<Entry> queue = new PriorityQueue<>((a, b) -> {
        int byDeadline = Long.compare(a.entry.expirationMs, b.entry.expirationMs);
        return byDeadline != 0 ? byDeadline : Long.compare(a.seq, b.seq);
    });
    private long nextSeq;

    @Override
    public void add(TimerTask task) {
        TimerTaskEntry entry = new TimerTaskEntry(task, task.delayMs + time.milliseconds());
        queue.add(new Entry(entry, nextSeq++));
    }

    /** Advances by timeoutMs, running every due task at its own deadline. */
    @Override
    public boolean advanceClock(long timeoutMs) {
        long target = time.milliseconds() + timeoutMs;
        boolean ran = false;
        while (true) {
            Entry head = queue.peek();
            if (head == null || head.entry.expirationMs > target) break;
            queue.poll();
            if (head.entry.cancelled()) continue;
            long now = time.milliseconds();
            if (head.entry.expirationMs > now) time.sleep(head.entry.expirationMs - now);
            head.entry.timerTask.run();
            ran = true;
        }
        long now = time.milliseconds();
        if (target > now) time.sleep(target - now);
        return ran;
    }

    /** Lets timeoutMs pass without running anything: a due task waits for expireDue. */
    void advanceWithoutRunning(long timeoutMs) {
        time.sleep(timeoutMs);
    }

    /**
     * Runs exactly one task: the first (creation order) of those due now that `which` accepts.
     * kgc's programs name each expiry in the order kgc's timer ran them, so two tasks of one
     * instant run one command apart and the coordinator is compared between them.
     */
    boolean expireDue(Predicate<TimerTask> which) {
        long now = time.milliseconds();
        Entry chosen = null;
        for (Entry e : queue) {
            if (e.entry.cancelled() || e.entry.expirationMs != now || !which.test(e.entry.timerTask)) continue;
            if (chosen == null || e.seq < chosen.seq) chosen = e;
        }
        if (chosen == null) return false;
        queue.remove(chosen);
        chosen.entry.timerTask.run();
        return true;
    }

    @Override
    public int size() {
        int live = 0;
        for (Entry e : queue) if (!e.entry.cancelled()) live++;
        return live;
    }

    @Override
    public void close() {}
}
