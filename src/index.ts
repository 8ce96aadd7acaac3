/**
 * kafka-lanes: Kafka-triggered serverless functions that run records concurrently with per-key order, a
 * Redis completion bitmap, retry and dead-letter topics. The one public entry: named exports only.
 *
 * @example
 * import { lanes, NonRetriableError } from 'kafka-lanes';
 * export const handler = lanes({ group: 'orders', value: 'json' }, async (record, ctx) => {
 *   if (!record.value) throw new NonRetriableError('empty order');
 *   await save(record.value, { signal: ctx.signal });
 * });
 */
export { LanesError, ConfigError, NonRetriableError, RetryLaterError } from './errors';
export { lanes } from './handler/lanes';
export { BatchNotHandedOffError, DeadlineError, RecordTimeoutError } from './engine/engine';
export type { InvocationContext } from './engine/engine';
export type { LanesContext, LanesRecord, RecordHandler } from './engine/types';
export type { OutputRecord } from './engine/effects';
export type { StepSerializer } from './options/lanes-options';
export { StepNameError, StepResultTooLargeError } from './engine/steps';
export { idempotencyCacheClient } from './effects/powertools-cache';
export { resolveOptions, DeserializationError, OptionsError, parseDuration, retryTopics, deadLetterTopic } from './options';
export type { LanesOptionsInput, LanesOptions, Ordering, Deserializer, DeserializerFn, KeyOf, Backoff, RetryOptions } from './options';
export { completionGroupId, retryTopic } from './options/names';
export { EventDecodeError } from './event';
export type { KafkaBatchResponse, KafkaRecord, KafkaHeader, RecordCoordinates, AwsKafkaEvent } from './event';
export { CompletionStore, StaleEpochError, NotAdmittedError, LaneConflictError, NotHeadError, StaleAttemptError } from './completion';
export { HandOffError } from './handoff/errors';
export { HandOffHeader, readHandOffHeaders, originOf } from './handoff/headers';
export type { HandOffHeaders } from './handoff/types';
export {
  runCommitter,
  MemberlessOffsetCommitter,
  AdminOffsetCommitter,
  ConsumerOffsetCommitter,
  GroupHasMembersError,
  OffsetCommitError,
  TopicMissingError,
  KafkaInternalsChangedError,
  LeaseLostError,
  CommitNotAppliedError,
} from './committer';
export type { CommitterResult, PartitionSummary, RunCommitterOptions, OffsetCommitter, CommitLease } from './committer';
