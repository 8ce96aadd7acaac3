import type { Consumer, Kafka } from 'kafkajs';
import { describeLane } from '../admin/status';
import { readHandOffHeaders } from '../handoff/headers';
import { laneOfDeadLetter, toDeadLetter, type DeadLetter } from '../operations/dead-letters';

/**
 * The dashboard's view of a group's dead-letter topic: one consumer follows it from the beginning (no offsets
 * committed, its group deleted at close) and keeps the latest letters in memory, decoded once, so filtering
 * and paging never read Kafka again. The letters kept are what a replay from the page works on.
 */

/** A dead letter as the page lists it: no payload beyond a short preview. */
export interface DeadLetterRow {
  readonly partition: number;
  readonly offset: number;
  /** When it was written to the dead-letter topic (epoch ms). */
  readonly timeMs: number;
  readonly reason: string;
  readonly origin: DeadLetter['origin'];
  readonly lane: string | undefined;
  /** The record key as text where printable (see `describeLane`); '' without a key. */
  readonly key: string;
  readonly attempt: number | undefined;
  readonly error: string;
  /** The value's first bytes as text (non-printable bytes shown as `.`), `null` for a tombstone. */
  readonly preview: string | null;
  readonly valueBytes: number;
}

export interface DeadLetterFilter {
  readonly reason?: string;
  readonly originTopic?: string;
  /** The lane as `status` names it, or the key as the rows show it. */
  readonly lane?: string;
  /** The record key as the rows show it (`key`). */
  readonly key?: string;
  /** Written at or after (epoch ms). */
  readonly sinceMs?: number;
  /** Written before (epoch ms). */
  readonly untilMs?: number;
  readonly offset?: number;
  readonly limit?: number;
}

const PREVIEW_BYTES = 160;
const KEY_MODE = { ordering: 'key', nullKey: 'independent' } as const;

/** Printable preview of a value: UTF-8 text with control characters and invalid sequences shown as `.`. */
export function previewOf(value: Buffer | null): string | null {
  if (value === null) return null;
  const text = value.subarray(0, PREVIEW_BYTES).toString('utf8').replace(/[\p{Cc}\p{Cf}\uFFFD]/gu, '.');
  return value.length > PREVIEW_BYTES ? `${text}…` : text;
}

/**
 * A dead letter as the dashboard and `kafka-lanes dlq list` show it: reason, error, key, origin, time, a preview.
 *
 * @example
 * deadLetterRow(toDeadLetter('orders-svc.dlq', 0, message)); // { partition: 0, offset: 3, reason: 'attempts-exhausted', error: 'Error: down', key: 'c-1', ... }
 */
export function deadLetterRow(letter: DeadLetter): DeadLetterRow {
  const facts = readHandOffHeaders(letter.record.headers);
  const error = [facts.errorName, facts.errorMessage].filter((part) => part !== undefined && part !== '').join(': ');
  const lane = laneOfDeadLetter(letter, KEY_MODE);
  return {
    partition: letter.record.partition,
    offset: letter.record.offset,
    timeMs: letter.record.timestamp,
    reason: letter.reason ?? '',
    origin: letter.origin,
    // The lane its copy carries; a copy written before the lane was recorded is shown with its key-mode lane.
    lane,
    key: lane === undefined ? '' : describeLane(lane),
    attempt: facts.attempt,
    error,
    preview: previewOf(letter.record.value),
    valueBytes: letter.record.value?.length ?? 0,
  };
}

/** Keeps the latest `capacity` dead letters of a topic, fed by a consumer or directly (tests). */
export class DeadLetterLog {
  readonly #capacity: number;
  #letters: Array<{ letter: DeadLetter; row: DeadLetterRow }> = [];
  /** Letters seen since start, including those dropped from memory. */
  seen = 0;

  constructor(capacity = 20_000) {
    this.#capacity = capacity;
  }

  add(letter: DeadLetter): void {
    this.seen += 1;
    this.#letters.push({ letter, row: deadLetterRow(letter) });
    if (this.#letters.length > this.#capacity) this.#letters = this.#letters.slice(-Math.floor(this.#capacity * 0.9));
  }

  /** The newest first, filtered, one page. */
  page(filter: DeadLetterFilter): { total: number; rows: DeadLetterRow[]; reasons: string[]; originTopics: string[] } {
    const matching = this.#letters
      .map((entry) => entry.row)
      .filter(
        (row) =>
          (filter.reason === undefined || row.reason === filter.reason) &&
          (filter.originTopic === undefined || row.origin.topic === filter.originTopic) &&
          // The lane as `status` names it (base64 of the key) or the key as the page shows it.
          (filter.lane === undefined || row.lane === filter.lane || (row.key !== '' && row.key === filter.lane)) &&
          (filter.key === undefined || row.key === filter.key) &&
          (filter.sinceMs === undefined || row.timeMs >= filter.sinceMs) &&
          (filter.untilMs === undefined || row.timeMs < filter.untilMs),
      )
      .reverse();
    const offset = filter.offset ?? 0;
    return {
      total: matching.length,
      rows: matching.slice(offset, offset + (filter.limit ?? 50)),
      reasons: [...new Set(this.#letters.map((entry) => entry.row.reason))].sort(),
      originTopics: [...new Set(this.#letters.map((entry) => entry.row.origin.topic))].sort(),
    };
  }

  /** The letters kept at these positions of the dead-letter topic; positions not kept are left out. */
  select(positions: ReadonlyArray<{ partition: number; offset: number }>): DeadLetter[] {
    const wanted = new Set(positions.map((p) => `${p.partition}:${p.offset}`));
    return this.#letters.filter(({ row }) => wanted.has(`${row.partition}:${row.offset}`)).map(({ letter }) => letter);
  }

  /** Dead letters written per minute over the last `minutes` minutes, the oldest first: `[minute start ms, count]`. */
  perMinute(nowMs: number, minutes: number): Array<[number, number]> {
    const end = Math.floor(nowMs / 60_000) * 60_000;
    const start = end - (minutes - 1) * 60_000;
    const counts = new Array<number>(minutes).fill(0);
    for (const { row } of this.#letters) {
      const index = Math.floor((row.timeMs - start) / 60_000);
      if (index >= 0 && index < minutes) counts[index] = (counts[index] ?? 0) + 1;
    }
    return counts.map((count, index) => [start + index * 60_000, count]);
  }
}

/** Follows `topic` from its beginning into `log` until the returned `stop` is called. */
export async function followDeadLetters(kafka: Kafka, topic: string, log: DeadLetterLog): Promise<{ stop: () => Promise<void> }> {
  const groupId = `kafka-lanes-dashboard-${process.pid}-${Date.now().toString(36)}`;
  const consumer: Consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 500 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => log.add(toDeadLetter(topic, partition, message)),
    });
  } catch (error) {
    // E.g. the topic does not exist (yet): a connected consumer left behind would keep the process alive.
    await consumer.disconnect().catch(() => undefined);
    throw error;
  }
  return {
    stop: async () => {
      await consumer.disconnect();
      const admin = kafka.admin();
      await admin.connect();
      // It committed nothing; deleting it keeps the group list of the cluster clean.
      await admin.deleteGroups([groupId]).catch(() => undefined);
      await admin.disconnect();
    },
  };
}
