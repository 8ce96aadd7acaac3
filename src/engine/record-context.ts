import type { Logger } from '@aws-lambda-powertools/logger';
import { LanesError } from '../errors';
import type { RecordParts } from '../options/deserialize';
import type { OutputRecord } from '../lanes/effects';
import { firstOriginOf, idempotencyKeyOf } from './idempotency-key';
import type { RecordDeadline } from './record-deadlines';
import type { EngineTask, InvocationScope } from './run-scope';
import { RecordEffects } from './steps';
import type { LanesContext, LanesRecord } from './types';

/**
 * What a handler gets for one record; its `signal`, its idempotency key and its steps' state are made only if the
 * handler uses them.
 */
export class RecordContext implements LanesContext {
  readonly attempt: number;
  readonly deadline: number;
  readonly #deadline: RecordDeadline;
  readonly #task: EngineTask;
  readonly #scope: InvocationScope<EngineTask>;
  effects: RecordEffects | undefined = undefined;

  constructor(task: EngineTask, scope: InvocationScope<EngineTask>, deadline: number, recordDeadline: RecordDeadline) {
    this.attempt = task.attempt;
    this.deadline = deadline;
    this.#deadline = recordDeadline;
    this.#task = task;
    this.#scope = scope;
  }

  get logger(): Logger {
    return this.#scope.logger;
  }

  get signal(): AbortSignal {
    return this.#deadline.signal;
  }

  get idempotencyKey(): string {
    return idempotencyKeyOf(this.#scope.options.group, firstOriginOf(this.#task.record.headers, this.#task.origin));
  }

  step<R>(name: string, fn: () => R | Promise<R>): Promise<R> {
    return this.#effects().step(name, fn);
  }

  send(topic: string, record: OutputRecord): void {
    this.#effects().send(topic, record);
  }

  #effects(): RecordEffects {
    if (this.effects !== undefined) return this.effects;
    const scope = this.#scope;
    const port = scope.effects;
    if (port === undefined) throw new LanesError('ctx.step and ctx.send need the effects store, which this engine was made without');
    const task = this.#task;
    const origin = firstOriginOf(task.record.headers, task.origin);
    // A source record's steps live under its own partition: its ref is shared by the partition's tasks.
    const own = origin === task.origin && task.ref.topic === origin.topic && task.ref.partition === origin.partition;
    const ref = own ? task.ref : { group: scope.options.group, topic: origin.topic, partition: origin.partition };
    // Only a record's own first run can skip reading its steps: a replayed dead letter's are another record's.
    this.effects = new RecordEffects(port, { ref, offset: origin.offset }, scope.options.group, scope.options, scope.effectsTtlMs, this.#deadline, own && task.fresh === true);
    return this.effects;
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
