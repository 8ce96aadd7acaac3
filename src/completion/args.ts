import type { CopyClaimRequest, ParkedRecord, HeadAdvance, HeadClaim, HeadClaimRequest, LaneBlock, LaneRelease } from '../ports/lane-head';
import type { AdmitRecord, AdmitResult, AdmitStatus } from '../ports/admission';
import type { PartitionCaps, PartitionWindow, PartitionRef } from '../ports/partition';
import { copyKey, parkKey, partitionKeys, stepsBlockKey, stepsBlockOf, type PartitionKeys } from './keys';
import type { RecordSteps } from '../ports/effects';
import { scriptError, UnexpectedReplyError } from './errors';
import { parseLaneHead } from './lanes-entry';

/**
 * Pure builders of script arguments and parsers of script replies: everything about a script call but
 * the I/O, so it is unit-tested without Redis.
 */
export interface ScriptCall {
  readonly keys: string[];
  readonly argv: Array<string | Buffer>;
}

const STATUS: Record<string, AdmitStatus> = { r: 'run', d: 'duplicate', p: 'parked', c: 'refused', h: 'handoff' };

/** How `admitCall` admits a batch: the partition's caps, the writer's epoch, the lanes to send payloads of. */
export interface AdmitCallOptions {
  readonly caps: PartitionCaps;
  readonly epoch: number;
  /** Lanes the script reported blocked: their records carry their payloads (default none). */
  readonly sendPayloadsOf?: ReadonlySet<string>;
}

/**
 * The call admitting `records`. Payloads go only with records of the lanes in `sendPayloadsOf` (lanes
 * the script reported blocked); every other record carries '' (not sent). So do the keys of park lists: only a
 * record with its payload can be parked, and a batch names up to thousands of lanes.
 */
export function admitCall(ref: PartitionRef, records: readonly AdmitRecord[], { caps, epoch, sendPayloadsOf = new Set() }: AdmitCallOptions): ScriptCall {
  const batch = encodeBatch(ref, records, sendPayloadsOf);
  const keys = partitionKeys(ref);
  return {
    keys: [keys.bits, keys.meta, keys.lanes, ...batch.parkKeys],
    argv: [
      String(epoch),
      String(caps.maxWindow),
      String(caps.maxParked),
      String(caps.maxParkedBytes),
      String(records.length),
      String(batch.laneIds.length),
      ...batch.laneIds,
      batch.offsets,
      batch.lanes,
      batch.parkLanes,
      ...batch.payloads,
    ],
  };
}

/** A batch as `admit-3.lua` reads it (see its ARGV). */
interface EncodedBatch {
  /** The batch's lanes, each once, in the order first named: a record's lane is its place here, from 1. */
  readonly laneIds: string[];
  /** Offsets as distances from the one before (the first as it is), space-separated. */
  readonly offsets: string;
  /** Each record's lane place (0: none), space-separated. */
  readonly lanes: string;
  /** The places of the lanes whose payloads are sent, space-separated, and their park lists' keys in that order. */
  readonly parkLanes: string;
  readonly parkKeys: string[];
  /** (record index, payload) pairs of the records whose payloads are sent. */
  readonly payloads: Array<string | Buffer>;
}

function encodeBatch(ref: PartitionRef, records: readonly AdmitRecord[], sendPayloadsOf: ReadonlySet<string>): EncodedBatch {
  const laneIndex = new Map<string, number>();
  const laneIds: string[] = [];
  const parkKeys: string[] = [];
  let parkLanes = '';
  const payloads: Array<string | Buffer> = [];
  // Offsets as distances and lane indexes, each one space-separated string: two arguments for a whole batch
  // instead of one or more per record (writing thousands of small arguments was a large part of a call's cost).
  // Numbers joined once, not a string added to per record (a piece of string each time).
  const offsets = new Array<number>(records.length);
  const lanes = new Array<number>(records.length);
  let previous = -1;
  // Nearly always empty: then no record asks the set.
  const anyPayloads = sendPayloadsOf.size > 0;
  for (let k = 0; k < records.length; k += 1) {
    const record = records[k]!;
    if (record.offset <= previous) {
      throw new RangeError(`admit: offsets must ascend strictly, got ${record.offset} after ${previous}`);
    }
    offsets[k] = k === 0 ? record.offset : record.offset - previous;
    previous = record.offset;
    let index = 0;
    if (record.lane !== undefined) {
      index = laneIndex.get(record.lane) ?? 0;
      const parks = anyPayloads && sendPayloadsOf.has(record.lane);
      if (index === 0) {
        index = laneIds.push(record.lane);
        laneIndex.set(record.lane, index);
        if (parks) {
          parkKeys.push(parkKey(ref, record.lane));
          parkLanes += parkLanes === '' ? String(index) : ` ${index}`;
        }
      }
      if (parks) {
        const payload = record.payload;
        const text = typeof payload === 'function' ? payload() : payload;
        if (text !== undefined && text !== '') payloads.push(String(k), text);
      }
    }
    lanes[k] = index;
  }
  return { laneIds, offsets: offsets.join(' '), lanes: lanes.join(' '), parkLanes, parkKeys, payloads };
}

function windowOf(base: unknown, highest: unknown, frontier: unknown): PartitionWindow | undefined {
  if (base === '' || base === undefined) return undefined;
  return { base: Number(base), highest: Number(highest), frontier: Number(frontier) };
}

/** Code 2 of the admit script: records of these blocked lanes need their payloads; nothing changed. */
export interface PayloadsNeeded {
  readonly payloadsNeeded: readonly string[];
}

export function parseAdmitReply(reply: unknown, count: number, where: string): AdmitResult | PayloadsNeeded {
  const [code, statuses, base, highest, frontier, heads, seenUpTo] = asArray(reply, where);
  if (typeof code !== 'number') throw new UnexpectedReplyError(`${where}: reply has no code`);
  if (code < 0) throw scriptError(code, '', where);
  if (code === 2) return { payloadsNeeded: (statuses as unknown[]).map(String) };
  if (count === 0) return { statuses: [], handoffHeads: [], backPressure: false, window: windowOf(base, highest, frontier) };
  const text = String(statuses);
  if (text.length !== count) throw new UnexpectedReplyError(`${where}: ${text.length} statuses for ${count} records`);
  return {
    statuses: statusesOf(text, where),
    handoffHeads: (heads as unknown[] | undefined ?? []).map((head) => parseLaneHead(String(head), where)),
    backPressure: code === 1,
    window: windowOf(base, highest, frontier),
    seenUpTo: seenUpTo === undefined ? undefined : String(seenUpTo) === '' ? -1 : Number(seenUpTo),
  };
}

/** One status per character of the reply, read by index: no string per character. */
function statusesOf(text: string, where: string): AdmitStatus[] {
  const statuses = new Array<AdmitStatus>(text.length);
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i]!;
    statuses[i] = STATUS[c] ?? unexpected(c, where);
  }
  return statuses;
}

/** Step results in one step block to delete (`stepBlocks`): its key and their fields. */
export interface StepBlock {
  readonly key: string;
  readonly fields: readonly string[];
}

/** The field of a step's result in its record's step block (`save-steps-1.lua`). */
export function stepField(offset: number, name: string): string {
  return `${offset}:${name}`;
}

/** The step blocks of records of one partition, each with the fields of their steps, blocks in the order first named. */
export function stepBlocks(ref: PartitionRef, records: readonly RecordSteps[]): StepBlock[] {
  const blocks = new Map<number, { key: string; fields: string[] }>();
  for (const { offset, names } of records) {
    const first = stepsBlockOf(offset);
    let block = blocks.get(first);
    if (block === undefined) blocks.set(first, (block = { key: stepsBlockKey({ ref, offset }), fields: [] }));
    for (const name of names) block.fields.push(stepField(offset, name));
  }
  return [...blocks.values()].filter((block) => block.fields.length > 0);
}

/**
 * Offsets in any order, sent sorted as one string of distances (see `mark-2.lua`). `steps`: the step blocks of
 * records of the partition (same hash tag) whose results are deleted once the bits are set.
 */
export function markCall(keys: PartitionKeys, offsets: readonly number[], epoch: number, steps: readonly StepBlock[] = []): ScriptCall {
  const sorted = Float64Array.from(offsets).sort();
  // Each offset as its distance from the one before, in place, joined once.
  for (let i = sorted.length - 1; i > 0; i -= 1) sorted[i] = sorted[i]! - sorted[i - 1]!;
  const text = sorted.join(' ');
  if (steps.length === 0) return { keys: [keys.bits, keys.meta], argv: [String(epoch), text] };
  return {
    keys: [keys.bits, keys.meta, ...steps.map((block) => block.key)],
    argv: [String(epoch), text, steps.map((block) => block.fields.length).join(' '), ...steps.flatMap((block) => block.fields)],
  };
}

/** Returns how many done bits were newly set. */
export function parseMarkReply(reply: unknown, where: string): number {
  const [code, detail] = asArray(reply, where);
  if (code !== 0) throw scriptError(Number(code), String(detail ?? ''), where);
  return Number(detail);
}

export function frontierCall(keys: PartitionKeys, trim: boolean): ScriptCall {
  return { keys: [keys.bits, keys.meta], argv: [trim ? '1' : '0'] };
}

export interface FrontierReading extends PartitionWindow {
  readonly trimmedBytes: number;
}

/** `undefined` when nothing was ever admitted on the partition. */
export function parseFrontierReply(reply: unknown, where: string): FrontierReading | undefined {
  const [code, base, highest, frontier, trimmed] = asArray(reply, where);
  if (code === 1) return undefined;
  if (code !== 0) throw scriptError(Number(code), '', where);
  return { base: Number(base), highest: Number(highest), frontier: Number(frontier), trimmedBytes: Number(trimmed) };
}

/** The call blocking a lane (`block-4.lua`); `nowMs` given: the store reads the clock, not this builder. */
export function blockCall(ref: PartitionRef, { head, parked = [], epoch = 0, nowMs }: LaneBlock & { readonly nowMs: number }): ScriptCall {
  const pairs: string[] = [];
  for (const record of parked) {
    if (record.offset <= head.offset) {
      throw new RangeError(`block: parked offset ${record.offset} is not above head offset ${head.offset}`);
    }
    pairs.push(String(record.offset), record.payload);
  }
  const keys = partitionKeys(ref);
  return {
    keys: [keys.bits, keys.meta, keys.lanes, parkKey(ref, head.lane)],
    argv: [
      String(epoch),
      head.lane,
      String(head.offset),
      String(head.attempt),
      head.state,
      String(nowMs),
      String(head.dueAtMs ?? nowMs),
      laneReason(head.reason ?? ''),
      ...pairs,
    ],
  };
}

/** Returns how many records were parked. */
export function parseBlockReply(reply: unknown, where: string): number {
  return parseMarkReply(reply, where);
}

/** The call releasing a lane (`release-4.lua`); `nowMs` given: the store reads the clock, not this builder. */
export function releaseCall(ref: PartitionRef, release: LaneRelease & { readonly nowMs: number }): ScriptCall {
  const { lane, headOffset, nextAttempt = 1, nowMs, leaseUntilMs = 0, hold } = release;
  const held = hold === undefined ? '' : 'lease' in hold ? `lease:${hold.lease}` : `claim:${hold.claim}`;
  const keys = partitionKeys(ref);
  return {
    keys: [keys.bits, keys.meta, keys.lanes, parkKey(ref, lane)],
    argv: [lane, String(headOffset), String(nextAttempt), String(nowMs), String(leaseUntilMs), held],
  };
}

/** A lane head's reason is one field of its `:lanes` entry: a `|` in it would shift the fields after it. */
export function laneReason(reason: string): string {
  return reason.replaceAll('|', '/');
}

export function advanceCall(ref: PartitionRef, lane: string, expected: { readonly offset: number; readonly attempt: number }, next: HeadAdvance): ScriptCall {
  const keys = partitionKeys(ref);
  return {
    keys: [keys.meta, keys.lanes, parkKey(ref, lane)],
    argv: [
      lane,
      String(expected.offset),
      String(expected.attempt),
      String(next.attempt),
      next.state,
      String(next.dueAtMs),
      String(next.leaseUntilMs),
      laneReason(next.reason ?? ''),
      next.leaseUntilMs > 0 ? next.payload ?? '' : '',
    ],
  };
}

/** The claim of a retry copy on its lane's head (`claim-1.lua`). */
export function claimCall(
  keys: PartitionKeys,
  lane: string,
  expected: { readonly offset: number; readonly attempt: number },
  claim: HeadClaimRequest,
): ScriptCall {
  if (claim.copy.includes('|')) throw new RangeError(`claim: a copy id never holds '|', got \`${claim.copy}\``);
  return {
    keys: [keys.lanes],
    argv: [lane, String(expected.offset), String(expected.attempt), claim.copy, String(claim.nowMs), String(Math.ceil(claim.untilMs))],
  };
}

export function parseClaimReply(reply: unknown, where: string, lane: string): HeadClaim {
  const [code, detail] = asArray(reply, where);
  if (code === 0) return { status: 'claimed' };
  if (code === 1) return { status: 'not-head', head: detail === '' || detail === undefined ? undefined : parseLaneHead(String(detail), where, lane) };
  if (code === 2) return { status: 'claimed-elsewhere', untilMs: Number(detail) };
  throw new UnexpectedReplyError(`${where}: unexpected claim reply code ${String(code)}`);
}

export function parseAdvanceReply(reply: unknown, where: string): void {
  const [code, detail] = asArray(reply, where);
  if (code !== 0) throw scriptError(Number(code), String(detail ?? ''), where);
}

/** The lane's new head (popped from its park list), or `undefined` when the lane is now free. */
export function parseReleaseReply(reply: unknown, where: string): ParkedRecord | undefined {
  const [code, offset, payload] = asArray(reply, where);
  if (code === 0) return undefined;
  if (code === 1) return { offset: Number(offset), payload: String(payload) };
  throw scriptError(Number(code), String(offset ?? ''), where);
}

function asArray(reply: unknown, where: string): unknown[] {
  if (!Array.isArray(reply)) throw new UnexpectedReplyError(`${where}: expected an array reply`);
  return reply;
}

function unexpected(c: string, where: string): never {
  throw new UnexpectedReplyError(`${where}: unknown status '${c}'`);
}

/** `claim-copy-1.lua`: unordered mode's claim of a retry copy by (origin, attempt), or `done` once it succeeded. */
export function claimCopyCall(origin: PartitionRef, { offset, attempt, copy, ttlMs, done }: CopyClaimRequest): ScriptCall {
  return { keys: [copyKey(origin, offset)], argv: [String(attempt), copy, String(Math.ceil(ttlMs)), done ? 'done' : 'claim'] };
}

/** `{ 0 }` or `{ 1, value }` of the effects scripts: `undefined` or the value. */
export function parseTakenReply(reply: unknown, what: string): string | undefined {
  if (!Array.isArray(reply) || (reply[0] !== 0 && reply[0] !== 1)) throw new UnexpectedReplyError(`${what}: unexpected reply ${JSON.stringify(reply)}`);
  if (reply[0] === 0) return undefined;
  const value: unknown = reply[1];
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
}

/** One record a recovery rebuilds: its offset, its lane's place (from 1) among the chunk's lanes or 0 for none, its park payload. */
export interface RebuildRecord {
  readonly offset: number;
  readonly lane: number;
  readonly payload: string;
}

/** One chunk of a recovery's rebuild: the offsets `[from, to]`, the lanes its records name, the records Kafka still has. */
export interface RebuildChunk {
  readonly from: number;
  readonly to: number;
  readonly lanes: readonly string[];
  readonly records: readonly RebuildRecord[];
}

/**
 * The call of `rebuild-records-3.lua`: the partition's state and the chunk's lanes' park lists; the range `[from, to]`,
 * the chunk's lanes, then (offset, lane, payload) triples.
 */
export function rebuildRecordsCall(ref: PartitionRef, { from, to, lanes, records }: RebuildChunk, nowMs: number): ScriptCall {
  const keys = partitionKeys(ref);
  const argv = [String(nowMs), String(from), String(to), String(lanes.length), ...lanes];
  for (const record of records) argv.push(String(record.offset), String(record.lane), record.payload);
  return { keys: [keys.bits, keys.meta, keys.lanes, ...lanes.map((lane) => parkKey(ref, lane))], argv };
}
