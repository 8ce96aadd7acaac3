/**
 * kafka-lanes/operator: what an operator's own script needs to do what the CLI and the dashboard do: one function per
 * command (`topics`, `status`, `lane release`, `dlq list|replay`, `reset`, `produce`, `dashboard`, a committer run
 * with its re-drive), and what their arguments are made of that kafkajs and ioredis do not give: the options resolver
 * and the topic names it derives, the lane id, the completion store (made on an ioredis client), the hand-off writer
 * (the sink a command writes copies through), the hand-off headers, and the argument types. The errors a script acts
 * on: a member-less committer refusing a live group, a lost committer lease, a lane in the wrong state. Everything
 * else (result types, the other errors, the building blocks) stays in its module: a handler needs none of it
 * (`kafka-lanes` exports what a handler author uses), and tests import the parts they drive from their modules.
 *
 * @example
 * import { readStatus, renderStatus } from 'kafka-lanes/operator';
 */
export { laneIdOf } from './lanes/lane-id';
export { resolveOptions, retryTopics, deadLetterTopic, type LanesOptions } from './options';
export { completionGroupId } from './options/names';
export type { KafkaRecord } from './event';
export { CompletionStore } from './completion';
export { HandOffWriter } from './handoff/writer';
export { HandOffHeader, readHandOffHeaders } from './handoff/headers';
export { runCommitter, MemberlessOffsetCommitter, GroupHasMembersError, LeaseLostError, type RunCommitterOptions } from './committer';
export { LaneStateError, releaseHeldLane, type OperatorParts } from './operations/lanes';
export { readDeadLetters, replayDeadLetters, type DeadLetter, type ReplayFilter } from './operations/dead-letters';
export { redriveExpiredLeases, type RedriveOptions } from './recovery/redrive';
export { ensureTopics, readStatus, renderStatus, readBlockedLanes, planReset, applyReset, produceRecords } from './admin';
export type { EnsureTopicsOptions, GroupStatus, LanesQuery, ResetPlan, ProduceRecord } from './admin';
export { startDashboard, type DashboardOptions } from './dashboard';
