package dev.loupe.agent.relay;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.common.TopicPartition;

import java.util.Collection;
import java.util.HashSet;
import java.util.Set;

/**
 * Hands partitions over at a rebalance: a revoked partition's settled offsets are committed while it is
 * still ours, then its pending records are dropped (the next owner reads them from the committed offset).
 * Runs inside poll(), on the relay's thread.
 */
final class RebalanceListener implements ConsumerRebalanceListener {
    private final OffsetTracker offsets;
    private final RecordForwarder forwarder;

    RebalanceListener(OffsetTracker offsets, RecordForwarder forwarder) {
        this.offsets = offsets;
        this.forwarder = forwarder;
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        offsets.commitRevoked(partitions);
        forget(partitions);
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
        forget(partitions);
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {}

    private void forget(Collection<TopicPartition> partitions) {
        Set<TopicPartition> gone = new HashSet<>(partitions);
        forwarder.dropPending(gone);
        offsets.forget(gone);
    }
}
