/**
 * Reading the errors kafkajs throws. A Kafka error reaches us as a `KafkaJSProtocolError` with Kafka's error
 * `code` and kafkajs' name for it in `type`, either thrown as is or as the `cause` of a kafkajs wrapper
 * (its retrier wraps what it gives up on in `KafkaJSNonRetriableError` / `KafkaJSNumberOfRetriesExceeded`).
 */

/** Kafka protocol error codes the framework acts on, named as Kafka names them (kafkajs' `type` in brackets). */
export const KafkaErrorCode = {
  UnknownTopicOrPartition: 3,
  LeaderNotAvailable: 5,
  /** `NOT_LEADER_FOR_PARTITION` in kafkajs (`NOT_LEADER_OR_FOLLOWER` in Kafka since 2.6). */
  NotLeaderOrFollower: 6,
  RequestTimedOut: 7,
  ReplicaNotAvailable: 9,
  /** A record (batch) above the topic's `max.message.bytes`. */
  MessageTooLarge: 10,
  /** A record batch larger than a log segment of the topic (`segment.bytes`). */
  RecordListTooLarge: 18,
  /** `GROUP_LOAD_IN_PROGRESS` in kafkajs. */
  CoordinatorLoadInProgress: 14,
  /** `GROUP_COORDINATOR_NOT_AVAILABLE` in kafkajs. */
  CoordinatorNotAvailable: 15,
  /** `NOT_COORDINATOR_FOR_GROUP` in kafkajs. */
  NotCoordinator: 16,
  IllegalGeneration: 22,
  UnknownMemberId: 25,
  RebalanceInProgress: 27,
  TopicAuthorizationFailed: 29,
  GroupAuthorizationFailed: 30,
  ClusterAuthorizationFailed: 31,
  NotController: 41,
  FencedInstanceId: 82,
  /** The broker's record validation refused a record (e.g. a compacted topic given a null key). */
  InvalidRecord: 87,
} as const;

/** Kafka's error as kafkajs reports it. */
export interface KafkaErrorInfo {
  /** kafkajs' name of the error, e.g. `UNKNOWN_MEMBER_ID`. */
  readonly type: string;
  /** Kafka's error code. */
  readonly code: number;
}

function kafkaErrorAt(value: unknown): KafkaErrorInfo | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { type, code } = value as { type?: unknown; code?: unknown };
  return typeof type === 'string' && typeof code === 'number' ? { type, code } : undefined;
}

/**
 * The Kafka error in `error`: on the error itself, or else on its chain of causes.
 *
 * @example
 * kafkaErrorOf(e); // { type: 'UNKNOWN_MEMBER_ID', code: 25 }, or undefined for a connection error
 */
export function kafkaErrorOf(error: unknown): KafkaErrorInfo | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    const found = kafkaErrorAt(current);
    if (found !== undefined) return found;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The Kafka error thrown as is (not one found among the causes of a kafkajs wrapper). */
export function ownKafkaErrorOf(error: unknown): KafkaErrorInfo | undefined {
  return kafkaErrorAt(error);
}
