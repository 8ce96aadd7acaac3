/** One blocked or held lane, as an operator sees it. */
export interface BlockedLane {
  readonly topic: string;
  readonly partition: number;
  /** The lane id as Redis and the CLI name it (base64 of the key bytes in key mode). */
  readonly lane: string;
  /** The key as text where it is printable UTF-8; otherwise what kind of lane it is (see `describeLane`). */
  readonly key: string;
  readonly headOffset: number;
  readonly attempt: number;
  readonly state: 'retrying' | 'held';
  /** When the lane blocked (epoch ms). */
  readonly sinceMs: number;
  /** When its retry copy is due; for a held head, when it was dead-lettered (epoch ms). */
  readonly dueAtMs: number;
  readonly reason: string;
}

/** A blocked or held lane as `status` lists it: the lane, the records parked behind its head, and how long it has been blocked. */
export type StatusLane = BlockedLane & { readonly parked: number; readonly ageMs: number };

/** The blocked and held lanes `status` lists: the oldest first, at most the limit asked for. */
export interface StatusLanes {
  /** Every blocked or held lane of the group, listed or not. */
  readonly total: number;
  readonly lanes: readonly StatusLane[];
}

const COLUMNS: ReadonlyArray<[string, (lane: StatusLane) => string]> = [
  ['LANE', (lane) => lane.lane],
  ['KEY', (lane) => lane.key],
  ['TOPIC', (lane) => lane.topic],
  ['PART', (lane) => String(lane.partition)],
  ['STATE', (lane) => lane.state],
  ['HEAD', (lane) => String(lane.headOffset)],
  ['ATTEMPT', (lane) => String(lane.attempt)],
  ['PARKED', (lane) => String(lane.parked)],
  ['AGE', (lane) => age(lane.ageMs)],
  ['REASON', (lane) => lane.reason],
];

/**
 * The lanes as a table: the id to give `lane release` and `dlq replay --lane`, the key, where the head is, its
 * attempt, what waits behind it and since when.
 *
 * @example
 * renderLanes({ total: 1, lanes: [lane] });
 * // blocked and held lanes (oldest first, 1 of 1):
 * // LANE      KEY   TOPIC   PART  STATE  HEAD  ATTEMPT  PARKED  AGE    REASON
 * // Yy0x      c-1   orders  0     held   41    5        2       12m3s  non-retriable
 */
export function renderLanes(lanes: StatusLanes): string[] {
  if (lanes.total === 0) return [];
  const rows = [COLUMNS.map(([title]) => title), ...lanes.lanes.map((lane) => COLUMNS.map(([, cell]) => cell(lane)))];
  const widths = COLUMNS.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0)));
  const more = lanes.total > lanes.lanes.length ? '; --lanes <n> lists more' : '';
  return [
    `blocked and held lanes (oldest first, ${lanes.lanes.length} of ${lanes.total}${more}):`,
    ...rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd()),
  ];
}

/** `3h4m`, `12m3s`, `45s`, `800ms`: the two largest units. */
export function age(ms: number): string {
  const units: Array<[string, number]> = [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1_000]];
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))}ms`;
  const parts: string[] = [];
  let rest = ms;
  for (const [unit, size] of units) {
    const count = Math.floor(rest / size);
    if (count > 0 || parts.length > 0) parts.push(`${count}${unit}`);
    rest -= count * size;
    if (parts.length === 2) break;
  }
  return parts.join('');
}
