import { LanesError } from '../errors';

/**
 * The committer's lease on its group expired or was taken over during the run. Nothing more was
 * committed; what was committed before moved forward only. The next run starts afresh.
 */
export class LeaseLostError extends LanesError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ...options, retriable: true });
  }
}

/**
 * Kafka did not take a commit: reading the group back after the commit showed an offset below the
 * planned one. kafkajs returns from some commits without committing (a consumer that is not running, a
 * partition not assigned to the admin's short-lived member), so every run reads its commits back.
 */
export class CommitNotAppliedError extends LanesError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ...options, retriable: true });
  }
}

/** The committer state in Redis holds something this version cannot read. */
export class CorruptStateError extends LanesError {}

/**
 * A commit to `groupId` failed: Kafka refused it, or the request did not complete. `kafkaError` is Kafka's
 * error name as kafkajs reports it (`UNKNOWN_TOPIC_OR_PARTITION`, `GROUP_AUTHORIZATION_FAILED`, ...), when
 * there is one. A partition the broker did not refuse may have been committed; `runCommitter` reads every
 * commit back, so the next run starts from what Kafka really has.
 */
export class OffsetCommitError extends LanesError {
  readonly groupId: string;
  readonly kafkaError: string | undefined;

  constructor(
    message: string,
    options: { groupId: string; kafkaError?: string | undefined; retriable?: boolean; cause?: unknown },
  ) {
    super(message, { retriable: options.retriable ?? false, cause: options.cause });
    this.groupId = options.groupId;
    this.kafkaError = options.kafkaError;
  }
}

/**
 * Kafka refused a member-less commit because `groupId` has live members (it answers `UNKNOWN_MEMBER_ID`,
 * `ILLEGAL_GENERATION`, `REBALANCE_IN_PROGRESS` or `FENCED_INSTANCE_ID` to a commit without a member).
 * Nothing was committed. The completion group `<group>.lanes` must have no consumers: something joined it.
 */
export class GroupHasMembersError extends OffsetCommitError {}

/**
 * Topics the committer was asked about no longer exist in Kafka (deleted). `runCommitter` skips their
 * partitions and reports them as `topic-missing`.
 */
export class TopicMissingError extends LanesError {
  readonly topics: readonly string[];

  constructor(message: string, options: { topics: readonly string[]; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.topics = [...options.topics];
  }
}

/**
 * Kafka refused the committer a read it needs to plan a run: what `groupId` has committed on `topics`
 * (`TOPIC_AUTHORIZATION_FAILED`: no DESCRIBE on the topics, which Kafka then leaves out of every topic list, as
 * if they did not exist; `GROUP_AUTHORIZATION_FAILED`: no DESCRIBE on the group). Their partitions are not
 * skipped (a deleted topic is): the run fails, naming what to grant.
 */
export class OffsetFetchRefusedError extends LanesError {
  readonly groupId: string;
  readonly topics: readonly string[];
  readonly kafkaError: string;

  constructor(message: string, options: { groupId: string; topics: readonly string[]; kafkaError: string; cause?: unknown }) {
    super(message, { retriable: false, cause: options.cause });
    this.groupId = options.groupId;
    this.topics = [...options.topics];
    this.kafkaError = options.kafkaError;
  }
}

/**
 * The kafkajs internals `MemberlessOffsetCommitter` relies on are not what it expects: kafkajs was
 * upgraded past the version it was written for (2.2.4). Use `AdminOffsetCommitter` (public API) meanwhile.
 */
export class KafkaInternalsChangedError extends LanesError {}
