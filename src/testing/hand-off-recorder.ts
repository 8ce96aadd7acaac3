/** The hand-off writer of `testLanes`: it keeps what it is given (retry copies, dead letters, outputs) for the test. */
import { sendDeclared } from '../handler/declared-outputs';
import type { HandOffItem, HandOffOutcome, OutputMessage, HandOffSink } from '../ports/handoff';
import { parseOutputId } from '../engine/outputs';
import { OUTPUT_HEADER } from '../lanes/effects';
import type { DeadLetterReason } from '../lanes/outcome';
import type { OutputsNotice } from './outputs-notice';
import { bytesOf, readValue, text } from './recorders';
import type { TestDeadLetter, TestOutput, TestRetry } from './types';

/** A retry copy written and not delivered yet, with what the test shows of it. */
export interface PendingCopy {
  readonly item: HandOffItem;
  readonly shown: TestRetry;
  /** The test clock when it was written (epoch ms). */
  readonly writtenAt: number;
}

/**
 * Acknowledges every write at once and records it: a retry copy lands in `retries` and waits in `pending` until the
 * test delivers it, a dead letter in `deadLetters`, an output of a declared topic in `outputs` (an undeclared one is
 * refused as on Lambda, when outputs are declared).
 *
 * @example
 * const sink = new HandOffRecorder(() => clock, new Set(['orders-paid']));
 * const core = new LanesCore({ options, handler, store, handOff: () => sink, telemetry });
 */
export class HandOffRecorder implements HandOffSink {
  readonly retries: TestRetry[] = [];
  readonly deadLetters: TestDeadLetter[] = [];
  readonly outputs: TestOutput[] = [];
  #pending: PendingCopy[] = [];
  readonly #now: () => number;
  readonly #declared: ReadonlySet<string> | undefined;
  readonly #notice: OutputsNotice | undefined;

  constructor(now: () => number, declared: ReadonlySet<string> | undefined, notice?: OutputsNotice) {
    this.#now = now;
    this.#declared = declared;
    this.#notice = notice;
  }

  /** Retry copies written and not delivered yet, in write order. */
  get pending(): readonly PendingCopy[] {
    return this.#pending;
  }

  /** Takes the pending copies due by `at` (epoch ms) out of `pending`, in write order. */
  takeDue(at: number): PendingCopy[] {
    const due = this.#pending.filter((copy) => copy.item.dueAtMs <= at);
    this.#pending = this.#pending.filter((copy) => copy.item.dueAtMs > at);
    return due;
  }

  readonly write = async (items: readonly HandOffItem[]): Promise<HandOffOutcome[]> => {
    const at = this.#now();
    for (const item of items) {
      const origin = { topic: item.origin.topic, partition: item.origin.partition, offset: item.origin.offset ?? -1 };
      const key = text(item.record.key);
      const error = item.error === undefined ? {} : { error: { name: item.error.name, message: item.error.message } };
      if (item.kind === 'retry') {
        const shown: TestRetry = { origin, key, topic: item.topic, attempt: item.attempt, dueAt: item.dueAtMs, delayMs: Math.max(0, item.dueAtMs - at), ...error, deferred: item.deferred === true };
        this.retries.push(shown);
        this.#pending.push({ item, shown, writtenAt: at });
      } else {
        this.deadLetters.push({
          origin, key, value: readValue(item.record.value), rawValue: item.record.value, topic: item.topic,
          reason: item.reason as DeadLetterReason, attempts: item.attempt, ...error,
        });
      }
    }
    return items.map(() => ({ status: 'written' }));
  };

  readonly send = async (records: ReadonlyArray<readonly OutputMessage[]>): Promise<ReadonlyArray<Error | undefined>> => {
    if (this.#declared === undefined) this.#notice?.unchecked();
    const outcomes = await sendDeclared(this.#declared, records, async (declaredOnes) => {
      for (const message of declaredOnes.flat()) this.outputs.push(shownOutput(message));
      return declaredOnes.map(() => undefined);
    });
    for (const outcome of outcomes) if (outcome !== undefined) this.#notice?.refused(outcome);
    return outcomes;
  };
}

/** An output as the test shows it: text key and headers, the value parsed, the record it was sent for. */
function shownOutput(message: OutputMessage): TestOutput {
  const headers = Object.fromEntries(Object.entries(message.headers).map(([name, value]) => [name, text(value)!]));
  const origin = parseOutputId(headers[OUTPUT_HEADER] ?? '')?.origin ?? { topic: '', partition: Number.NaN, offset: Number.NaN };
  const rawValue = bytesOf(message.value);
  return {
    topic: message.topic, key: text(message.key), value: readValue(rawValue), rawValue, headers,
    ...(message.partition === undefined ? {} : { partition: message.partition }),
    origin,
  };
}
