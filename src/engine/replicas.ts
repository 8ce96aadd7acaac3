import type { LanesOptions } from '../options/lanes-options';
import { BatchNotHandedOffError } from '../errors';
import type { CompletionPort } from '../ports/completion';

/**
 * With `redis.waitForReplicas`, one `WAIT` after the invocation's last Redis write (docs/durability.md): its
 * hand-offs (parked records, lane heads, done bits) are on that many replicas before the event source moves past
 * them, so a failover loses none of them. Fewer in time fail the invocation: the batch is redelivered.
 */
export async function awaitReplicas(store: CompletionPort, options: LanesOptions): Promise<void> {
  const { waitForReplicas = 0, waitTimeoutMs = 1_000 } = options.redis;
  if (waitForReplicas <= 0 || store.waitForReplicas === undefined) return;
  const acknowledged = await store.waitForReplicas(waitForReplicas, waitTimeoutMs);
  if (acknowledged < waitForReplicas) {
    throw new BatchNotHandedOffError(
      `${acknowledged} of ${waitForReplicas} Redis replica(s) acknowledged this invocation's writes within ${waitTimeoutMs} ms; failing the invocation so the event source redelivers the batch`,
      { retriable: true },
    );
  }
}
