package kgc.reference;

import java.util.function.Supplier;
import org.apache.kafka.common.utils.Time;

/** Kafka's Time on a virtual clock that moves only when the scenario says so (starts at 0 ms). */
final class VirtualTime implements Time {
    private long nowMs;

    @Override
    public long milliseconds() {
        return nowMs;
    }

    @Override
    public long nanoseconds() {
        return nowMs * 1_000_000L;
    }

    @Override
    public void sleep(long ms) {
        nowMs += ms;
    }

    @Override
    public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
        throw new UnsupportedOperationException("the reference coordinator never waits");
    }
}
