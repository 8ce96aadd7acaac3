import type { GroupStatus } from '../admin/status';
import { retryTopic } from '../options/names';

/**
 * The figures the page draws over time, taken from successive status readings: lag per source and retry
 * partition, retry depth per tier, blocked lanes. A fixed number of samples is kept (the oldest dropped).
 */

export interface HistorySample {
  readonly atMs: number;
  /** `<topic>-<partition>` → lag, for source and retry partitions. */
  readonly lag: Readonly<Record<string, number>>;
  /** Tier (`5s`, `1m`, ...) → copies waiting in it. */
  readonly retryDepth: Readonly<Record<string, number>>;
  readonly blockedLanes: number;
  readonly heldLanes: number;
  readonly parked: number;
}

/** Columns for a chart: times (epoch seconds) and one array per series, `null` where a series had no value. */
export interface HistorySeries {
  readonly times: number[];
  readonly lag: Record<string, Array<number | null>>;
  readonly retryDepth: Record<string, Array<number | null>>;
  readonly blockedLanes: number[];
}

/** The figures of one reading worth keeping over time. */
export function sampleOf(status: GroupStatus): HistorySample {
  const lag: Record<string, number> = {};
  const retryDepth: Record<string, number> = {};
  const prefix = retryTopic(status.group, '');
  let blockedLanes = 0;
  let heldLanes = 0;
  let parked = 0;
  for (const p of status.partitions) {
    blockedLanes += p.blockedLanes;
    heldLanes += p.heldLanes;
    parked += p.parked;
    if (p.role === 'dead-letter' || p.lag === undefined) continue;
    lag[`${p.topic}-${p.partition}`] = p.lag;
    if (p.role === 'retry') {
      const tier = p.topic.slice(prefix.length);
      retryDepth[tier] = (retryDepth[tier] ?? 0) + p.lag;
    }
  }
  return { atMs: status.readAtMs, lag, retryDepth, blockedLanes, heldLanes, parked };
}

/** A ring of samples. */
export class History {
  readonly #capacity: number;
  #samples: HistorySample[] = [];

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  add(sample: HistorySample): void {
    this.#samples.push(sample);
    if (this.#samples.length > this.#capacity) this.#samples.shift();
  }

  get size(): number {
    return this.#samples.length;
  }

  /**
   * The samples as chart columns.
   *
   * @example
   * history.series(); // { times: [1764755000, ...], lag: { 'orders-0': [12, ...] }, retryDepth: { '5s': [3, ...] }, blockedLanes: [1, ...] }
   */
  series(): HistorySeries {
    const names = (pick: (s: HistorySample) => Readonly<Record<string, number>>): string[] =>
      [...new Set(this.#samples.flatMap((s) => Object.keys(pick(s))))].sort();
    const columns = (pick: (s: HistorySample) => Readonly<Record<string, number>>): Record<string, Array<number | null>> =>
      Object.fromEntries(names(pick).map((name) => [name, this.#samples.map((s) => pick(s)[name] ?? null)]));
    return {
      times: this.#samples.map((s) => s.atMs / 1000),
      lag: columns((s) => s.lag),
      retryDepth: columns((s) => s.retryDepth),
      blockedLanes: this.#samples.map((s) => s.blockedLanes),
    };
  }
}
