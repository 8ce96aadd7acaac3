export { batchItemFailures } from './batch-response';
export type { KafkaBatchItemFailure, KafkaBatchResponse, KafkaItemIdentifier, RecordCoordinates } from './batch-response';
export { bufferToSignedBytes, decodeBase64, encodeBase64, isBase64, signedBytesToBuffer } from './bytes';
export { decodeKafkaEvent, decodeKafkaEventLazily, LazyPartitionBatch, batchSize } from './decode';
export { encodeKafkaEvent, encodeKafkaRecord } from './encode';
export { awsRecordOfMessage, recordOfMessage } from './kafkajs-message';
export { isDecodeFailure, planOffsets, sameJson } from './offsets';
export type { Delivered, OffsetPlan, OffsetSlot } from './offsets';
export type { EncodeKafkaEventInput, KafkaRecordInput } from './encode';
export { EventDecodeError } from './errors';
export { parseTopicPartitionKey, topicPartitionKey } from './topic-partition';
export type { TopicPartition } from './topic-partition';
export type {
  AwsKafkaEvent,
  AwsKafkaHeader,
  AwsKafkaRecord,
  AwsMskEvent,
  AwsSelfManagedKafkaEvent,
  DecodeFailure,
  DecodedKafkaEvent,
  KafkaEventSource,
  KafkaHeader,
  KafkaRecord,
  PartitionBatch,
  SchemaMetadata,
  TimestampType,
} from './types';
