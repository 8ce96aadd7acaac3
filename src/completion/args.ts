import type { ParkedRecord, HeadAdvance, HeadClaim, HeadClaimRequest, NewLaneHead, LaneHold } from '../ports/lane-head';
import type { AdmitRecord, AdmitResult, AdmitStatus } from '../ports/admission';
import type { PartitionCaps, PartitionWindow, PartitionRef } from '../ports/partition';
import { copyKey, parkKey, stepsBlockKey, stepsBlockOf, type PartitionKeys } from './keys';
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

/**
 * The call admitting `records`. Payloads go only with records of the lanes in `sendPayloadsOf` (lanes
 * the script reported blocked); every other record carries '' (not sent). So do the keys of park lists: only a
 * record with its payload can be parked, and a batch names up to thousands of lanes.
 */
export function admitCall(
  ref: PartitionRef,
  keys: PartitionKeys,
  records: readonly AdmitRecord[],
  caps: PartitionCaps,
  epoch: number,
  sendPayloadsOf: ReadonlySet<string> = new Set(),
): ScriptCall {
  const laneIndex = new Map<string, number>();
  const laneKeys: string[] = [];
  let parkLanes = '';
  const laneIds: string[] = [];
  const payloads: Array<string | Buffer> = [];
  // Offsets as distances and lane indexes, each one space-separated string: two arguments for a whole batch
  // instead of one or more per record (writing thousands of small arguments was a large part of a call's cost).
  let offsets = '';
  let lanes = '';
  let previous = -1;
  for (let k = 0; k < records.length; k += 1) {
    const record = records[k]!;
    if (record.offset <= previous) {
      throw new RangeError(`admit: offsets must ascend strictly, got ${record.offset} after ${previous}`);
    }
    offsets += k === 0 ? String(record.offset) : ` ${record.offset - previous}`;
    previous = record.offset;
    let index = 0;
    if (record.lane !== undefined) {
      index = laneIndex.get(record.lane) ?? 0;
      if (index === 0) {
        index = laneIds.push(record.lane);
        laneIndex.set(record.lane, index);
        if (sendPayloadsOf.has(record.lane)) {
          laneKeys.push(parkKey(ref, record.lane));
          parkLanes += parkLanes === '' ? String(index) : ` ${index}`;
        }
      }
      if (sendPayloadsOf.has(record.lane)) {
        const payload = record.payload;
        const text = typeof payload === 'function' ? payload() : payload;
        if (text !== undefined && text !== '') payloads.push(String(k), text);
      }
    }
    lanes += k === 0 ? String(index) : ` ${index}`;
  }
  return {
    keys: [keys.bits, keys.meta, keys.lanes, ...laneKeys],
    argv: [
      String(epoch),
      String(caps.maxWindow),
      String(caps.maxParked),
      String(caps.maxParkedBytes),
      String(records.length),
      String(laneIds.length),
      ...laneIds,
      offsets,
      lanes,
      parkLanes,
      ...payloads,
    ],
  };
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
    statuses: [...text].map((c) => STATUS[c] ?? unexpected(c, where)),
    handoffHeads: (heads as unknown[] | undefined ?? []).map((head) => parseLaneHead(String(head), where)),
    backPressure: code === 1,
    window: windowOf(base, highest, frontier),
    seenUpTo: seenUpTo === undefined ? undefined : String(seenUpTo) === '' ? -1 : Number(seenUpTo),
  };
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
  let text = '';
  for (let i = 0; i < sorted.length; i += 1) text += i === 0 ? String(sorted[0]) : ` ${sorted[i]! - sorted[i - 1]!}`;
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

export function blockCall(
  ref: PartitionRef,
  keys: PartitionKeys,
  head: NewLaneHead,
  parked: readonly ParkedRecord[],
  epoch: number,
  nowMs: number,
): ScriptCall {
  const pairs: string[] = [];
  for (const record of parked) {
    if (record.offset <= head.offset) {
      throw new RangeError(`block: parked offset ${record.offset} is not above head offset ${head.offset}`);
    }
    pairs.push(String(record.offset), record.payload);
  }
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

export function releaseCall(
  ref: PartitionRef,
  keys: PartitionKeys,
  lane: string,
  expectedHeadOffset: number,
  nextAttempt: number,
  nowMs: number,
  leaseUntilMs = 0,
  hold?: LaneHold,
): ScriptCall {
  const held = hold === undefined ? '' : 'lease' in hold ? `lease:${hold.lease}` : `claim:${hold.claim}`;
  return {
    keys: [keys.bits, keys.meta, keys.lanes, parkKey(ref, lane)],
    argv: [lane, String(expectedHeadOffset), String(nextAttempt), String(nowMs), String(leaseUntilMs), held],
  };
}

/** A lane head's reason is one field of its `:lanes` entry: a `|` in it would shift the fields after it. */
export function laneReason(reason: string): string {
  return reason.replaceAll('|', '/');
}

export function advanceCall(
  ref: PartitionRef,
  keys: PartitionKeys,
  lane: string,
  expected: { readonly offset: number; readonly attempt: number },
  next: HeadAdvance,
): ScriptCall {
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
export function claimCopyCall(ref: PartitionRef, offset: number, attempt: number, copy: string, ttlMs: number, done: boolean): ScriptCall {
  return { keys: [copyKey(ref, offset)], argv: [String(attempt), copy, String(Math.ceil(ttlMs)), done ? 'done' : 'claim'] };
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

/** The arguments of `rebuild-records-3.lua`: the range `[from, to]`, the chunk's lanes, then (offset, lane, payload) triples. */
export function rebuildRecordsArgs(nowMs: number, from: number, to: number, lanes: readonly string[], records: readonly RebuildRecord[]): string[] {
  const argv = [String(nowMs), String(from), String(to), String(lanes.length), ...lanes];
  for (const record of records) argv.push(String(record.offset), String(record.lane), record.payload);
  return argv;
}
