import type { Logger } from '@aws-lambda-powertools/logger';
import { BatchNotHandedOffError } from '../errors';
import { batchItemFailures, topicPartitionKey, type KafkaBatchResponse, type RecordCoordinates } from '../event';
import type { HandOffItem, HandOffOutcome, HandOffSink } from '../ports/handoff';
import type { RunReport } from './run-report';

/**
 * Writes hand-off copies, bounded by the invocation's deadline; one outcome per item. A copy the broker
 * refused for good was dead-lettered stripped by the writer: it is logged and counted here.
 */
export async function writeHandOffs(
  { sink, handOffSignal, report, logger }: { sink: HandOffSink; handOffSignal: AbortSignal; report: RunReport; logger: Logger },
  items: readonly HandOffItem[],
): Promise<readonly HandOffOutcome[]> {
  if (items.length === 0) return [];
  // The invocation's signal itself: the hand-off writer gives a signal one listener for all the writes it bounds
  // (`withinDeadline`). A signal derived per write (`AbortSignal.any`) would make Node walk every signal derived from
  // the invocation's each time one is collected: a cost per write that grows with the writes of the invocation.
  const outcomes = await sink.write(items, { signal: handOffSignal });
  outcomes.forEach((outcome, i) => {
    if (outcome.status !== 'refused') return;
    const item = items[i]!;
    report.count('refusedByBroker');
    logger.error('the broker refused a hand-off copy for good: a dead-letter copy without its value was written instead', {
      topic: item.topic, origin: item.origin, attempt: item.attempt, reason: outcome.reason, error: outcome.error,
    });
  });
  return outcomes;
}

/**
 * An invocation's answer: the records to redeliver as a partial batch response, or a failed invocation when one
 * cannot be named (no offset) or partial batch responses are off.
 */
export function batchResponse(redelivered: readonly RecordCoordinates[], unreportable: number, partialBatchResponse: boolean): KafkaBatchResponse {
  if (unreportable > 0) {
    // A partial batch response cannot name a record without an offset: only a failed invocation makes
    // the event source deliver the batch again.
    throw new BatchNotHandedOffError(
      `${unreportable} malformed record(s) without a readable offset could not be dead-lettered; failing the invocation so the event source redelivers the batch`,
      { retriable: true },
    );
  }
  if (redelivered.length > 0 && !partialBatchResponse) {
    const first = redelivered[0]!;
    throw new BatchNotHandedOffError(
      `${redelivered.length} record(s) could not be handed off (first: ${topicPartitionKey(first.topic, first.partition)}@${first.offset}); failing the invocation so the event source redelivers the batch`,
      { retriable: true },
    );
  }
  return batchItemFailures(redelivered);
}
