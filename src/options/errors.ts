import { ConfigError, LanesError } from '../errors';
import { topicPartitionKey } from '../event';

/** The part of a record a deserializer turns into a value. */
export type RecordPart = 'key' | 'value';

/**
 * The key or value of a record could not be deserialized. Not retriable: the same bytes fail the same way, so the
 * record goes to the dead-letter topic; `cause` is what the deserializer threw.
 */
export class DeserializationError extends LanesError {
  readonly part: RecordPart;
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;

  constructor(
    part: RecordPart,
    record: { readonly topic: string; readonly partition: number; readonly offset: number },
    detail: string,
    options: { cause?: unknown } = {},
  ) {
    super(`Cannot deserialize the ${part} of record ${topicPartitionKey(record.topic, record.partition)}@${record.offset}: ${detail}`, {
      ...options,
      retriable: false,
    });
    this.part = part;
    this.topic = record.topic;
    this.partition = record.partition;
    this.offset = record.offset;
  }
}

/**
 * The options of `lanes(...)` are invalid. The message lists every problem found, one per line; `problems` holds
 * the same lines, for tools (the serverless plugin) that show them their own way.
 */
export class OptionsError extends ConfigError {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(problems.join('\n'));
    this.problems = problems;
  }
}
