/**
 * kafka-lanes/operator: what the CLI, the dashboard and an operator's own scripts use beside a handler: the
 * options resolver and the names it derives, the lane id, the completion store, the committer (member-less, the
 * AWS topology) and the errors a run of it may end with, the hand-off headers and writer (the sink the operator
 * commands, the re-drive and a recovery write through), the operator commands (`dlq replay`, `lane release`,
 * re-drive), the topic, status and reset tools and the dashboard: every argument of its functions can be made
 * from it, kafkajs and ioredis. A handler needs none of
 * it: `kafka-lanes` itself exports what a handler author uses. Tests import the parts they drive from their
 * modules.
 *
 * @example
 * import { readStatus, renderStatus } from 'kafka-lanes/operator';
 */
export { laneIdOf, PARTITION_LANE, NULL_KEY_LANE } from './lanes/lane-id';
export { resolveOptions, OptionsError, retryTopics, deadLetterTopic } from './options';
export type { LanesOptions } from './options';
export { completionGroupId, retryTopic } from './options/names';
export type { KafkaRecord } from './event';
export { CompletionStore } from './completion';
export { HandOffError } from './handoff/errors';
export { HandOffWriter } from './handoff/writer';
export { HandOffHeader, readHandOffHeaders, originOf } from './handoff/headers';
export type { HandOffHeaders } from './handoff/types';
export {
  runCommitter,
  MemberlessOffsetCommitter,
  GroupHasMembersError,
  OffsetCommitError,
  TopicMissingError,
  KafkaInternalsChangedError,
  LeaseLostError,
  CommitNotAppliedError,
} from './committer';
export type { CommitterResult, PartitionSummary, RunCommitterOptions, OffsetCommitter, CommitLease } from './committer';
export { LaneStateError, laneOfDeadLetter, readDeadLetters, releaseHeldLane, replayDeadLetters, REPLAY_OF_HEADER } from './retry/operator';
export type { DeadLetter, OperatorParts, ReplayAction, ReplayFilter } from './retry/operator';
export { redriveExpiredLeases, type Redriven, type RedriveOptions } from './recovery/redrive';
export { ensureTopics, readStatus, renderStatus, planReset, applyReset, TopicsNotReadyError } from './admin';
export type { EnsureTopicsOptions, EnsureTopicsResult, GroupStatus, PartitionStatus, ResetPlan } from './admin';
export { readBlockedLanes } from './admin';
export { parseProduceRecords, produceRecords } from './admin';
export type { ProduceInput, ProduceRecord, ProducedRecord } from './admin';
export type { BlockedLane, LanesPage, LanesQuery } from './admin';
export { startDashboard, type Dashboard, type DashboardOptions } from './dashboard';
