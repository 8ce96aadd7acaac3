import type { Admin } from 'kafkajs';
import { LanesError } from '../errors';

/**
 * Waits until every partition of `topics` has a leader in the metadata and that leader answers a ListOffsets
 * for it. Right after CreateTopics / CreatePartitions a KRaft broker answers UNKNOWN_TOPIC_OR_PARTITION ("This
 * server does not host this topic-partition") for a while, and kafkajs gives up on it (its own
 * `waitForLeaders` included), so the first produce would fail. Any error is retried until the deadline;
 * the last one is the `cause` of the timeout error.
 *
 * @throws LanesError when the topics are not ready within `timeoutMs`.
 * @example
 * await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 3 }], waitForLeaders: false });
 * await waitForTopicsReady(admin, ['orders'], { timeoutMs: 30_000 });
 */
export async function waitForTopicsReady(admin: Admin, topics: readonly string[], { timeoutMs }: { timeoutMs: number }): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let pending = [...new Set(topics)];
  let lastProblem: unknown;
  let delayMs = 50;
  while (pending.length > 0) {
    const notReady: string[] = [];
    for (const topic of pending) {
      try {
        if (!(await isReady(admin, topic))) {
          notReady.push(topic);
          lastProblem = `a partition of ${topic} has no leader yet`;
        }
      } catch (error) {
        notReady.push(topic);
        lastProblem = error;
      }
    }
    pending = notReady;
    if (pending.length === 0) return;
    if (Date.now() >= deadline) {
      const reason = lastProblem instanceof Error ? lastProblem.message : String(lastProblem);
      throw new LanesError(`Topics ${pending.join(', ')} were not ready (every partition led and served) within ${timeoutMs} ms: ${reason}`, {
        retriable: true,
        cause: lastProblem,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    delayMs = Math.min(delayMs * 2, 1_000);
  }
}

async function isReady(admin: Admin, topic: string): Promise<boolean> {
  const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
  const partitions = metadata.topics.find((entry) => entry.name === topic)?.partitions ?? [];
  if (partitions.length === 0 || partitions.some((partition) => partition.leader < 0 || partition.partitionErrorCode !== 0)) return false;
  // The leader in the metadata may not host the partition yet; a ListOffsets goes to the leader itself.
  const offsets = await admin.fetchTopicOffsets(topic);
  return offsets.length === partitions.length;
}
