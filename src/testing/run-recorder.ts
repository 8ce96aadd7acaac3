/** The handler runs of `testLanes`: each run noted as it starts and settles, with the lane it ran in, for the order checks. */
import type { LanesContext, LanesRecord, RecordHandler } from '../engine/types';
import { isPromiseLike } from '../engine/record-context';
import type { KafkaRecord } from '../event';
import { laneIdOf, NULL_KEY_LANE, PARTITION_LANE } from '../lanes/lane-id';
import type { LanesOptions } from '../options/lanes-options';
import { text, type Mutable } from './recorders';
import type { TestRun } from './types';

type Origin = { readonly topic: string; readonly partition: number; readonly offset: number | undefined };

const originId = (o: Origin): string => `${o.topic}\n${o.partition}\n${o.offset}`;

/** The lane key of a record as text: what `keyOf` returns, else the record key; `null` for none. */
function laneKeyText(record: KafkaRecord, options: LanesOptions): string | null {
  const key = options.keyOf === undefined ? record.key : options.keyOf(record);
  if (key === null || key === undefined) return null;
  return typeof key === 'string' ? key : key.toString('utf8');
}

/**
 * Wraps the record handler under test (`noted`) to keep every run in `runs`, and the lane of every source record
 * delivered (`delivered`), so a test can ask for a key's order and check that no lane ran out of order or twice at once.
 *
 * @example
 * const recorder = new RunRecorder(options, handler.recordHandler, () => clock);
 * const core = new LanesCore({ options, handler: recorder.noted, store, handOff, telemetry });
 */
export class RunRecorder<V, K> {
  readonly runs: Array<TestRun<V, K>> = [];
  readonly #options: LanesOptions;
  readonly #handler: RecordHandler;
  readonly #now: () => number;
  /** The lane of every source record delivered, by origin. */
  readonly #lanes = new Map<string, string | undefined>();
  /** The lane key (text) of every lane delivered to, by lane id: a hashed long key's lane shows its key too. */
  readonly #laneKeys = new Map<string, string | null>();
  /** Runs in flight, per lane, and what broke the order. */
  readonly #running = new Map<string, number>();
  readonly #overlaps: string[] = [];

  constructor(options: LanesOptions, handler: RecordHandler, now: () => number) {
    this.#options = options;
    this.#handler = handler;
    this.#now = now;
  }

  /** Notes the lane of a source record delivered. */
  delivered(record: KafkaRecord): void {
    const lane = laneIdOf(record, this.#options);
    this.#lanes.set(originId(record), lane);
    if (lane !== undefined && !this.#laneKeys.has(lane)) this.#laneKeys.set(lane, laneKeyText(record, this.#options));
  }

  /** The handler under test, each run noted (its lane counted running until it settles). */
  readonly noted: RecordHandler = (record: LanesRecord, ctx: LanesContext) => {
    const { origin } = record;
    const lane = this.#lanes.get(originId(origin));
    const laneId = lane === undefined ? undefined : `${origin.topic}\n${origin.partition}\n${lane}`;
    if (laneId !== undefined) {
      if ((this.#running.get(laneId) ?? 0) > 0) this.#overlaps.push(`${this.#describeLane(origin, lane!)}: offset ${origin.offset} started while an earlier run of the lane was still running`);
      this.#running.set(laneId, (this.#running.get(laneId) ?? 0) + 1);
    }
    const run: Mutable<TestRun<V, K>> = {
      topic: origin.topic, partition: origin.partition, offset: origin.offset, key: text(record.rawKey), value: record.value as V,
      attempt: ctx.attempt, at: this.#now(), idempotencyKey: ctx.idempotencyKey, status: 'running', record: record as LanesRecord<V, K>,
    };
    this.runs.push(run);
    const settled = (error?: { error: unknown }): void => {
      if (laneId !== undefined) this.#running.set(laneId, this.#running.get(laneId)! - 1);
      run.status = error === undefined ? 'succeeded' : 'failed';
      if (error !== undefined) run.error = error.error;
    };
    let result: unknown;
    try {
      result = this.#handler(record, ctx);
    } catch (error) {
      settled({ error });
      throw error;
    }
    if (!isPromiseLike(result)) {
      settled();
      return result;
    }
    return Promise.resolve(result).then((value) => {
      settled();
      return value;
    }, (error: unknown) => {
      settled({ error });
      throw error;
    });
  };

  /** The lane key of a lane delivered to, as text; `null` for a partition's lane, the null keys' lane or a hashed key never seen. */
  keyOfLane(lane: string): string | null {
    if (lane === PARTITION_LANE || lane === NULL_KEY_LANE) return null;
    return this.#laneKeys.get(lane) ?? (lane.startsWith('#') ? null : Buffer.from(lane, 'base64').toString('utf8'));
  }

  /**
   * The engine's own derivation (a long key hashed as the engine hashes it), from the lane key as given: with
   * `keyOf`, the key it returns (a customer id), not the Kafka key.
   */
  laneOfKey(key: string | null): string | undefined {
    if (this.#options.ordering === 'partition') return PARTITION_LANE;
    const record = { key: key === null ? null : Buffer.from(key, 'utf8') } as KafkaRecord;
    return laneIdOf(record, { ordering: this.#options.ordering, nullKey: this.#options.nullKey });
  }

  /** The offsets of `key`'s runs in a partition, in start order. */
  order(key: string | null, topic: string, partition: number): number[] {
    return this.runs.filter((run) => run.key === key && run.topic === topic && run.partition === partition).map((run) => run.offset);
  }

  /** Throws naming each lane whose runs started out of offset order or overlapped. */
  assertOrder(): void {
    if (this.#options.ordering === 'unordered') throw new Error('`ordering: \'unordered\'` promises no order to assert');
    const problems = [...this.#overlaps];
    const last = new Map<string, number>();
    for (const run of this.runs) {
      const lane = this.#lanes.get(originId(run));
      if (lane === undefined) continue;
      const id = `${run.topic}\n${run.partition}\n${lane}`;
      const before = last.get(id);
      if (before !== undefined && run.offset < before) problems.push(`${this.#describeLane(run, lane)}: offset ${run.offset} started after offset ${before}`);
      last.set(id, run.offset);
    }
    if (problems.length > 0) throw new Error(`runs out of order (ordering: '${this.#options.ordering}'):\n${problems.join('\n')}`);
  }

  #describeLane(o: { topic: string; partition: number }, lane: string): string {
    const key = this.keyOfLane(lane);
    return `${o.topic}-${o.partition} ${key === null ? (lane === PARTITION_LANE ? 'partition lane' : `lane ${lane}`) : `key \`${key}\``}`;
  }
}
