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
export * from './processor';
export { resolveOptions, DeserializationError, OptionsError, parseDuration, retryTopics, deadLetterTopic } from './options';
export type { LanesOptionsInput } from './options';
export * from './event';
export { CompletionStore, DEFAULT_CAPS, StaleEpochError, NotAdmittedError, LaneConflictError, NotHeadError } from './completion';
export type { PartitionRef, AdmitResult, AdmitStatus, PartitionWindow, LaneHead } from './completion';
export { HandOffWriter, HandOffError, HandOffHeader, readHandOffHeaders, originOf } from './handoff';
export type { HandOffItem, HandOffHeaders } from './handoff';
export {
  runCommitter,
  MemberlessOffsetCommitter,
  AdminOffsetCommitter,
  ConsumerOffsetCommitter,
  planCommit,
  completionGroupId,
  GroupHasMembersError,
  OffsetCommitError,
  TopicMissingError,
  KafkaInternalsChangedError,
  LeaseLostError,
  CommitNotAppliedError,
} from './committer';
export type { CommitterResult, PartitionSummary, RunCommitterOptions, OffsetCommitter, CommitLease } from './committer';
