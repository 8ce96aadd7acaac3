import type { Logger } from '@aws-lambda-powertools/logger';
import type { RecordParts } from '../options/deserialize';
import type { RecordDeadline } from './record-deadlines';
import type { EngineTask } from './run-scope';
import type { LanesContext, LanesRecord } from './types';

/** What a handler gets for one record; its `signal` is made only if the handler reads it. */
export class RecordContext implements LanesContext {
  readonly attempt: number;
  readonly deadline: number;
  readonly logger: Logger;
  readonly #deadline: RecordDeadline;

  constructor(attempt: number, deadline: number, logger: Logger, recordDeadline: RecordDeadline) {
    this.attempt = attempt;
    this.deadline = deadline;
    this.logger = logger;
    this.#deadline = recordDeadline;
  }

  get signal(): AbortSignal {
    return this.#deadline.signal;
  }
}

/** What the handler sees of a task's record. */
export function recordView(task: EngineTask, parts: RecordParts): LanesRecord {
  const { record } = task;
  return {
    topic: record.topic,
    partition: record.partition,
    offset: record.offset,
    timestamp: record.timestamp,
    timestampType: record.timestampType,
    key: parts.key,
    value: parts.value,
    rawKey: record.key,
    rawValue: record.value,
    headers: record.headers,
    origin: task.origin,
  };
}

export function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
