export { backoffDelay } from './backoff';
export { DEFAULTS, ENV, LIMITS } from './constants';
export { deserialize, deserializeKey, deserializeValue, readRecordParts } from './deserialize';
export type { RecordParts } from './deserialize';
export { isStandardSchema, resolvePart, SchemaValidationError, validatePart } from './standard-schema';
export type { PartOutput, RecordPartInput, ResolvedPart, StandardSchemaV1 } from './standard-schema';
export { parseDuration } from './duration';
export { DeserializationError, OptionsError } from './errors';
export type { RecordPart } from './errors';
export { deadLetterTopic, retryTopic, retryTopicFor, retryTopics, tierFor, topicNameProblem } from './retry-tiers';
export { resolveOptions } from './resolve-options';
export type {
  BackoffInput,
  KafkaOptionsInput,
  LanesOptionsInput,
  RedisOptionsInput,
  RetryOptionsInput,
  RetryTopic,
  SaslInput,
} from './types';
export type { Backoff, Deserializer, DeserializerFn, EventRecordFormat, KafkaOptions, KeyOf, LanesOptions, Ordering, RedisOptions, RetryOptions } from './lanes-options';
