export {
  COPY_HEADROOM_BYTES,
  RETENTION_HEADROOM_MS,
  TOPICS_DEFAULTS,
  describeTopics,
  ensureTopics,
  formatMs,
  parseTopicRequest,
  planDerivedTopics,
  planOutputTopics,
  planSourceTopics,
  type DerivedTopicsInput,
  type EnsureTopicsOptions,
  type EnsureTopicsResult,
  type TopicAction,
  type TopicRequest,
  type TopicRole,
  type TopicState,
  type TopicsPlan,
} from './topics';
export {
  describeLane,
  readBlockedLanes,
  readStatus,
  renderStatus,
  type GroupStatus,
  type LaneSort,
  type LanesPage,
  type LanesQuery,
  type PartitionRole,
  type PartitionStatus,
} from './status';
export { age, renderLanes, type BlockedLane, type StatusLane, type StatusLanes } from './lanes-table';
export { applyReset, planReset, renderResetPlan, type ResetPartition, type ResetPlan } from './reset';
export { escapeGlob, findPartitions, partitionKeysPattern, partitionOfKey, scanKeys, unescapeName } from '../completion/redis-scan';
export { CREATE_TOPICS_READY_DEFAULTS, createTopicsReady, notReady, waitForTopicsReady } from './create-topics';
export type { CreateTopicsReadyOptions, CreateTopicsReadyResult, ReadyAdmin, ReadyTopic, TopicsAdmin } from './create-topics';
export { TopicsNotReadyError } from './errors';
export { readGroupFigures, type GroupFigures } from './group-figures';
export { describeGroupUse, groupChecks, ownGroups, type GroupsInput, type GroupUse, type OwnGroup } from './doctor-groups';
export { checkKafka, checkRedis, clusterModeCheck, describeKafkaAuth, describeRedisAuth, evictionCheck, renderChecks, topicChecks } from './doctor';
export type { Check, CheckStatus } from './check';
export type { TopicsInput } from './doctor';
export { parseProduceRecords, produceRecords, type ProduceInput, type ProduceRecord, type ProducedRecord } from './produce';
