export * from './types';
export * from './errors';
export { planCommit, parseCommittedOffset, partitionId, type PlanInput } from './plan';
export { committerLeaseKey, committerReadingsKey } from '../completion/keys';
export { completionGroupId } from '../options/names';
export { CommitterLease } from './lease';
export {
  type OffsetCommitter,
  type CommitLease,
  type OffsetReader,
  type FetchedOffsets,
  parseFetchedOffsets,
  fetchCommittedOffsets,
} from './offset-committer';
export {
  MemberlessOffsetCommitter,
  MEMBERLESS_COMMITTER_DEFAULTS,
  type MemberlessOffsetCommitterOptions,
} from './memberless-committer';
export { AdminOffsetCommitter, type CommitterAdmin } from './admin-committer';
export { eventSourcePositions } from './event-source';
export { ConsumerOffsetCommitter, type ConsumerOffsetCommitterOptions } from './consumer-committer';
export {
  runCommitter,
  COMMITTER_DEFAULTS,
  type RunCommitterOptions,
  type CommitterResult,
  type PartitionSummary,
} from './committer';
