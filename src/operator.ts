/**
 * kafka-lanes/operator: what operators, admin tools and tests use beside a handler: the options resolver and
 * the names it derives, the completion store, the committer, the hand-off headers and writer, the operator
 * commands (`dlq replay`, `lane release`, re-drive) and the topic and status tools the CLI is built on.
 * A handler needs none of it: `kafka-lanes` itself exports what a handler author uses.
 *
 * @example
 * import { readStatus, renderStatus } from 'kafka-lanes/operator';
 */
export { BatchNotHandedOffError } from './errors';
export type { InvocationContext } from './engine/run-scope';
export { laneIdOf, PARTITION_LANE, NULL_KEY_LANE } from './lanes/lane-id';
export { resolveOptions, OptionsError, parseDuration, retryTopics, deadLetterTopic } from './options';
export type { LanesOptions, Backoff, RetryOptions } from './options';
export { completionGroupId, retryTopic } from './options/names';
export { EventDecodeError } from './event';
export type { KafkaRecord, RecordCoordinates, AwsKafkaEvent } from './event';
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
export { LaneStateError, laneOfDeadLetter, readDeadLetters, releaseHeldLane, replayDeadLetters, REPLAY_OF_HEADER } from './retry/operator';
export type { DeadLetter, OperatorParts, ReplayAction, ReplayFilter } from './retry/operator';
export { redriveExpiredLeases, type Redriven, type RedriveOptions } from './retry/redrive';
export { ensureTopics, readStatus, renderStatus, planReset, applyReset, createTopicsReady, TopicsNotReadyError } from './admin';
export type { EnsureTopicsOptions, EnsureTopicsResult, GroupStatus, PartitionStatus, ResetPlan } from './admin';
export { describeLane, readBlockedLanes, readGroupFigures } from './admin';
export type { BlockedLane, GroupFigures, LanesPage, LanesQuery } from './admin';
export { startDashboard, type Dashboard, type DashboardOptions } from './dashboard';
