import type { LaneSort, LanesQuery } from '../admin/status';
import type { DeadLetterFilter } from './dead-letters';

/**
 * Query parameters and action bodies of the dashboard's API, checked before anything reads Redis or Kafka: a
 * bad value is a `BadRequest` (HTTP 400) whose message says what was expected and what was given.
 */

export class BadRequest extends Error {
  override readonly name = 'BadRequest';
}

/** The most rows one page may ask for. */
export const MAX_PAGE = 500;

const LANE_SORTS: readonly LaneSort[] = ['age', 'attempt', 'due', 'offset', 'partition', 'key', 'state'];
const ALLOWED: Record<string, readonly string[]> = {
  lanes: ['sort', 'dir', 'state', 'topic', 'partition', 'offset', 'limit'],
  dlq: ['reason', 'topic', 'lane', 'key', 'since', 'until', 'offset', 'limit'],
};

function shown(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
}

function integer(params: URLSearchParams, name: string, min: number, max: number): number | undefined {
  const text = params.get(name);
  if (text === null) return undefined;
  const value = Number(text);
  if (!/^[0-9]{1,15}$/.test(text) || value < min || value > max) {
    throw new BadRequest(`Expected \`${name}\` to be an integer from ${min} to ${max}, got ${shown(text)}`);
  }
  return value;
}

function text(params: URLSearchParams, name: string): string | undefined {
  const value = params.get(name);
  if (value === null || value === '') return undefined;
  if (value.length > 512) throw new BadRequest(`Expected \`${name}\` to be at most 512 characters, got ${value.length}`);
  return value;
}

function only(params: URLSearchParams, kind: keyof typeof ALLOWED): void {
  const allowed = ALLOWED[kind] ?? [];
  for (const name of new Set(params.keys())) {
    // The access token travels in the query too; it was checked before this point.
    if (name === 'token') continue;
    if (!allowed.includes(name)) throw new BadRequest(`Unknown query parameter \`${name.slice(0, 60)}\`; expected one of ${allowed.join(', ')}`);
    if (params.getAll(name).length > 1) throw new BadRequest(`Expected \`${name}\` once, got it ${params.getAll(name).length} times`);
  }
}

/**
 * `GET /api/lanes?sort=age&dir=asc&state=held&topic=orders&partition=3&offset=0&limit=50`.
 *
 * @example
 * parseLanesQuery(new URLSearchParams('sort=attempt&dir=desc')); // { sort: 'attempt', descending: true, offset: 0, limit: 50 }
 */
export function parseLanesQuery(params: URLSearchParams): LanesQuery {
  only(params, 'lanes');
  const sort = params.get('sort') ?? 'age';
  if (!(LANE_SORTS as readonly string[]).includes(sort)) throw new BadRequest(`Expected \`sort\` to be one of ${LANE_SORTS.join(', ')}, got ${shown(sort)}`);
  const dir = params.get('dir') ?? 'asc';
  if (dir !== 'asc' && dir !== 'desc') throw new BadRequest(`Expected \`dir\` to be asc or desc, got ${shown(dir)}`);
  const state = params.get('state') ?? undefined;
  if (state !== undefined && state !== 'retrying' && state !== 'held') throw new BadRequest(`Expected \`state\` to be retrying or held, got ${shown(state)}`);
  const topic = text(params, 'topic');
  const partition = integer(params, 'partition', 0, 1_000_000);
  return {
    sort: sort as LaneSort,
    descending: dir === 'desc',
    ...(state === undefined ? {} : { state }),
    ...(topic === undefined ? {} : { topic }),
    ...(partition === undefined ? {} : { partition }),
    offset: integer(params, 'offset', 0, 100_000_000) ?? 0,
    limit: integer(params, 'limit', 1, MAX_PAGE) ?? 50,
  };
}

/** `GET /api/dlq?reason=exhausted&topic=orders&lane=...&key=c-1&since=<epoch ms>&until=<epoch ms>&offset=0&limit=50`. */
export function parseDeadLetterQuery(params: URLSearchParams): DeadLetterFilter {
  only(params, 'dlq');
  const reason = text(params, 'reason');
  const topic = text(params, 'topic');
  const lane = text(params, 'lane');
  const key = text(params, 'key');
  const sinceMs = integer(params, 'since', 0, Number.MAX_SAFE_INTEGER);
  const untilMs = integer(params, 'until', 0, Number.MAX_SAFE_INTEGER);
  return {
    ...(reason === undefined ? {} : { reason }),
    ...(topic === undefined ? {} : { originTopic: topic }),
    ...(lane === undefined ? {} : { lane }),
    ...(key === undefined ? {} : { key }),
    ...(sinceMs === undefined ? {} : { sinceMs }),
    ...(untilMs === undefined ? {} : { untilMs }),
    offset: integer(params, 'offset', 0, 100_000_000) ?? 0,
    limit: integer(params, 'limit', 1, MAX_PAGE) ?? 50,
  };
}

export interface ReleaseRequest {
  readonly topic: string;
  readonly partition: number;
  readonly lane: string;
}

export interface ReplayRequest {
  readonly letters: ReadonlyArray<{ partition: number; offset: number }>;
}

function object(body: unknown, what: string): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new BadRequest(`Expected the ${what} body to be a JSON object`);
  const fields = body as Record<string, unknown>;
  // The page asks the operator first; a request that does not say it was confirmed changes nothing.
  if (fields['confirmed'] !== true) throw new BadRequest(`Expected \`confirmed: true\` in the ${what} body: every action is confirmed first`);
  return fields;
}

function nonNegative(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new BadRequest(`Expected \`${name}\` to be a non-negative integer, got ${shown(JSON.stringify(value) ?? 'nothing')}`);
  }
  return value;
}

function string(value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '' || value.length > 512) {
    throw new BadRequest(`Expected \`${name}\` to be a non-empty string of at most 512 characters, got ${shown(JSON.stringify(value) ?? 'nothing')}`);
  }
  return value;
}

/** `POST /api/lanes/release` body: `{ topic, partition, lane, confirmed: true }`. */
export function parseReleaseRequest(body: unknown): ReleaseRequest {
  const fields = object(body, 'release');
  return { topic: string(fields['topic'], 'topic'), partition: nonNegative(fields['partition'], 'partition'), lane: string(fields['lane'], 'lane') };
}

/** `POST /api/dlq/replay` body: `{ letters: [{ partition, offset }, ...], confirmed: true }`. */
export function parseReplayRequest(body: unknown): ReplayRequest {
  const fields = object(body, 'replay');
  const letters = fields['letters'];
  if (!Array.isArray(letters) || letters.length === 0 || letters.length > MAX_PAGE) {
    throw new BadRequest(`Expected \`letters\` to be a list of 1 to ${MAX_PAGE} dead-letter positions`);
  }
  return {
    letters: letters.map((entry: unknown, index) => {
      if (typeof entry !== 'object' || entry === null) throw new BadRequest(`Expected \`letters[${index}]\` to be { partition, offset }`);
      const at = entry as Record<string, unknown>;
      return { partition: nonNegative(at['partition'], `letters[${index}].partition`), offset: nonNegative(at['offset'], `letters[${index}].offset`) };
    }),
  };
}
