/**
 * The engine's side of `ctx.send` and `dedupeOutputs`: a record's outputs are produced after its handler
 * succeeded and before it is done; a record that is a repeat of another stage's output is skipped.
 */
import { LanesError } from '../errors';
import { messageOf } from '../describe';
import type { KafkaHeader, RecordCoordinates } from '../event';
import { deadlineSignal } from '../deadline';
import { LegacyOutputHeader, OUTPUT_HEADER } from '../lanes/effects';
import type { OutputId } from '../ports/effects';
import type { OutputMessage, HandOffSink } from '../ports/handoff';
import type { EngineTask, PathParts, ScopeFigures, ScopeGiven } from './run-scope';
import { firstOriginOf, formatFirstOrigin, parseFirstOrigin } from './idempotency-key';

/** The outputs of a record could not be produced (retriable: the record runs again, its steps stored). */
export class OutputsNotSentError extends LanesError {}

/**
 * Produces the outputs of the records of one invocation that finish together as one send (one produce request per
 * partition leader), bounded by the invocation's hand-off deadline: each record waits for the broker's
 * acknowledgement of its own outputs, and fails only if they were not acknowledged.
 *
 * @example
 * const outputs = new OutputBatches(scope, sink, handOffSignal);
 * await outputs.send(effects.seal()); // the record is done only after this
 */
export class OutputBatches {
  readonly #scope: ScopeFigures;
  readonly #sink: HandOffSink;
  readonly #handOffSignal: AbortSignal;
  #open: { records: Array<readonly OutputMessage[]>; settled: Promise<ReadonlyArray<Error | undefined>> } | undefined = undefined;

  constructor(scope: ScopeFigures, sink: HandOffSink, handOffSignal: AbortSignal) {
    this.#scope = scope;
    this.#sink = sink;
    this.#handOffSignal = handOffSignal;
  }

  /** Settles once the broker acknowledged these outputs (of one record); rejects if it did not. */
  send(outputs: readonly OutputMessage[]): Promise<void> {
    if (outputs.length === 0) return Promise.resolve();
    if (this.#sink.send === undefined) return Promise.reject(new OutputsNotSentError('ctx.send: this engine was given no output producer'));
    let open = this.#open;
    if (open === undefined) {
      const records: Array<readonly OutputMessage[]> = [];
      // After the current turn's microtasks: every record finishing now has added its outputs by then.
      const settled = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.#flush(records));
      open = this.#open = { records, settled };
    }
    const i = open.records.push(outputs) - 1;
    return open.settled.then((outcomes) => {
      const error = outcomes[i];
      if (error !== undefined) throw notSent(outputs, error);
    });
  }

  async #flush(records: ReadonlyArray<readonly OutputMessage[]>): Promise<ReadonlyArray<Error | undefined>> {
    this.#open = undefined;
    let outcomes: ReadonlyArray<Error | undefined>;
    try {
      outcomes = await this.#sink.send!(records, { signal: deadlineSignal(undefined, this.#handOffSignal) });
    } catch (error) {
      const failed = error instanceof Error ? error : new Error(String(error));
      return records.map(() => failed);
    }
    let sent = 0;
    for (let i = 0; i < records.length; i += 1) if (outcomes[i] === undefined) sent += records[i]!.length;
    this.#scope.count('outputs', sent);
    return outcomes;
  }
}

/** A record's outputs not acknowledged: the topics and Kafka's answer in the message (what a dead letter and the logs show). */
function notSent(outputs: readonly OutputMessage[], error: Error): OutputsNotSentError {
  const topics = [...new Set(outputs.map((output) => output.topic))].map((topic) => `\`${topic}\``).join(', ');
  return new OutputsNotSentError(`${outputs.length} output(s) to ${topics} not acknowledged (${messageOf(error)}): the record runs again`, {
    cause: error,
    retriable: true,
  });
}

/**
 * The identity an output carries (its `lanes-output` header, or the three `lanes-output-*` headers of outputs written
 * before it), or `undefined` for a record that is not one (or whose headers are garbled: it then runs like any record).
 *
 * @example
 * outputIdOf(record.headers); // { group: 'orders', origin: { topic: 'orders', partition: 0, offset: 41 }, index: 0 }
 */
export function outputIdOf(headers: readonly KafkaHeader[]): OutputId | undefined {
  let group: string | undefined;
  let origin: string | undefined;
  let index: string | undefined;
  for (const { name, value } of headers) {
    if (value === null) continue;
    if (name === OUTPUT_HEADER) return parseOutputId(value.toString('utf8'));
    if (name === LegacyOutputHeader.Group) group = value.toString('utf8');
    else if (name === LegacyOutputHeader.Origin) origin = value.toString('utf8');
    else if (name === LegacyOutputHeader.Index) index = value.toString('utf8');
  }
  if (group === undefined || origin === undefined || index === undefined) return undefined;
  return outputIdFrom(group, origin, index);
}

/**
 * The `lanes-output` value of a record's outputs up to their index (`<group>/<topic>/<partition>/<offset>/`): built once
 * per record, each output appends its index.
 *
 * @example
 * `${outputIdPrefix('orders-svc', { topic: 'orders', partition: 0, offset: 41 })}${1}`; // 'orders-svc/orders/0/41/1'
 */
export function outputIdPrefix(group: string, origin: RecordCoordinates): string {
  return `${group}/${formatFirstOrigin(origin)}/`;
}

/**
 * A `lanes-output` header's value, `<group>/<topic>/<partition>/<offset>/<index>`, read; `undefined` when it is not one.
 *
 * @example
 * parseOutputId('orders-svc/orders/0/41/1'); // { group: 'orders-svc', origin: { topic: 'orders', partition: 0, offset: 41 }, index: 1 }
 */
export function parseOutputId(text: string): OutputId | undefined {
  const groupEnd = text.indexOf('/');
  const indexStart = text.lastIndexOf('/');
  if (groupEnd <= 0 || indexStart <= groupEnd) return undefined;
  return outputIdFrom(text.slice(0, groupEnd), text.slice(groupEnd + 1, indexStart), text.slice(indexStart + 1));
}

function outputIdFrom(group: string, origin: string, index: string): OutputId | undefined {
  if (!/^(?:0|[1-9]\d*)$/.test(index)) return undefined;
  const coordinates = parseFirstOrigin(origin);
  return coordinates === undefined ? undefined : { group, origin: coordinates, index: Number(index) };
}

/**
 * `dedupeOutputs`: takes the output a record carries for that record (its first origin); `true` when another record
 * took it first, so this one is a repeat and is skipped. A record that is not an output is never a repeat.
 */
export async function isRepeatedOutput(scope: ScopeGiven & PathParts, task: EngineTask): Promise<boolean> {
  const id = outputIdOf(task.record.headers);
  if (id === undefined) return false;
  if (scope.effects === undefined) throw new LanesError('dedupeOutputs needs the effects store, which this engine was made without');
  const runner = formatFirstOrigin(firstOriginOf(task.record.headers, task.origin));
  return !(await scope.effects.claimOutput(scope.options.group, id, runner, scope.effectsTtlMs));
}
