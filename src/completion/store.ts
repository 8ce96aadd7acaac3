import { admitCall, advanceCall, claimCall, parseClaimReply, claimCopyCall, parseTakenReply, parseAdvanceReply, blockCall, frontierCall, markCall, stepBlocks, parseAdmitReply, parseBlockReply, parseFrontierReply, parseMarkReply, parseReleaseReply, releaseCall, type FrontierReading, type ScriptCall } from './args';
import { parseLaneHead } from './lanes-entry';
import type { ParkedRecord, CopyClaim, CopyClaimRequest, HeadAdvance, HeadClaim, HeadClaimRequest, LaneBlock, LaneHead, LaneRelease } from '../ports/lane-head';
import { UnexpectedReplyError } from './errors';
import { readOriginState, reportLoss } from './loss-suspect';
import type { OriginState, PartitionAudit, PartitionCaps, PartitionRef } from '../ports/partition';
import { readTrackedPartitions, trackedMember, trackPartitions } from './tracked';
import { auditPartition } from './audit';
import { parkKey, partitionKeys } from './keys';
import { CommitterState } from './committer-state';
import { RedisEffects } from './effects-store';
import { GroupState } from './group-state';
import { PartitionRebuild } from './rebuild';
import { RedisServer } from './redis-server';
import { bounded, runScript, type RedisClient, type ScriptName } from './scripts';
import type { CompletionPort } from '../ports/completion';
import type { CallLimits } from '../ports/limits';
import type { AdmitRecord, AdmitResult } from '../ports/admission';
import type { RecordSteps } from '../ports/effects';

/** A 125 KB bitmap, 100,000 parked records, 64 MiB of parked payloads per partition. */
export const DEFAULT_CALL_TIMEOUT_MS = 5_000;

/**
 * How often a process adds a partition it admits on to the tracked set again: the set may be lost
 * (docs/durability.md), and a partition the committer neither tracks nor holds a marker for would never be committed.
 */
export const TRACK_REFRESH_MS = 60_000;

export const DEFAULT_CAPS: PartitionCaps = { maxWindow: 1_000_000, maxParked: 100_000, maxParkedBytes: 64 * 1024 * 1024 };

function where(op: string, ref: PartitionRef): string {
  return `${op} ${ref.topic}-${ref.partition} (group ${ref.group})`;
}

/**
 * The completion engine: one atomic script call per operation on a whole batch of one partition. It is also the door of
 * its Redis connection: it opens the other doors on that connection (the committer's state, a group's state for the
 * operator tools, a partition's rebuild, the exactly-once store, the server's own answers) and closes it, and hands
 * the client to no one.
 *
 * @example
 * const store = new CompletionStore(new Redis());
 * const ref = { group: 'orders', topic: 'orders', partition: 0 };
 * const { statuses } = await store.admit(ref, [{ offset: 41 }, { offset: 42, lane: 'a2V5' }]);
 * await store.markDone(ref, [41, 42]);
 * const reading = await store.frontier(ref, { trim: true }); // reading.frontier === 43
 */
export class CompletionStore implements CompletionPort {
  readonly #redis: RedisClient;
  readonly caps: PartitionCaps;
  /** Every call is given up after `timeoutMs` (default 5 s) or when `signal` aborts. */
  readonly limits: CallLimits;
  // Partitions this process added to the tracked set, and when: one SADD per partition per `TRACK_REFRESH_MS`.
  #tracked = new Map<string, number>();
  readonly #now: () => number;

  /** Caps not given take their `DEFAULT_CAPS` value; `now` is the clock of the tracked set's refresh. */
  constructor(redis: RedisClient, caps: Partial<PartitionCaps> = {}, limits: CallLimits = { timeoutMs: DEFAULT_CALL_TIMEOUT_MS }, now: () => number = Date.now) {
    this.#redis = redis;
    this.caps = { ...DEFAULT_CAPS, ...caps };
    this.limits = limits;
    this.#now = now;
  }

  /**
   * The same store with other call limits, e.g. an invocation's deadline signal.
   *
   * @example
   * const store = store.withLimits({ signal: AbortSignal.timeout(remainingMs - 250) });
   */
  withLimits(limits: CallLimits): CompletionStore {
    const view = new CompletionStore(this.#redis, this.caps, { ...this.limits, ...limits }, this.#now);
    view.#tracked = this.#tracked;
    return view;
  }

  /** The committer's door for `group` on this connection: lease, readings, tracked set, generation stamp and mark. */
  committerState(group: string): CommitterState {
    return new CommitterState(this.#redis, group, this.limits);
  }

  /** The operator tools' door to `group`'s state on this connection (status, dashboard, reset). */
  groupState(group: string): GroupState {
    return new GroupState(this.#redis, group);
  }

  /** A recovery's door to one partition's rebuild on this connection. */
  rebuild(ref: PartitionRef): PartitionRebuild {
    return new PartitionRebuild(this.#redis, ref);
  }

  /** The exactly-once store (steps and output claims) on this connection. */
  effects(): RedisEffects {
    return new RedisEffects(this.#redis);
  }

  /** What is asked of the server itself on this connection (`kafka-lanes doctor`). */
  server(): RedisServer {
    return new RedisServer(this.#redis);
  }

  /** Follows the connection's `error` events (which also keeps ioredis from printing them). */
  on(event: 'error', listener: (error: Error) => void): this {
    this.#redis.on(event, listener);
    return this;
  }

  /** Closes the connection once its pending replies are in (`QUIT`). */
  async close(): Promise<void> {
    await this.#redis.quit();
  }

  /** Drops the connection at once. */
  disconnect(): void {
    this.#redis.disconnect();
  }

  #run(name: ScriptName, call: ScriptCall): Promise<unknown> {
    return runScript(this.#redis, name, call, this.limits);
  }

  /**
   * Admits a delivered batch (offsets ascending): gaps bridged, duplicates found, blocked lanes parked.
   * One script call; a second one, with payloads, only when some record's lane is blocked.
   */
  async admit(ref: PartitionRef, records: readonly AdmitRecord[], epoch = 0): Promise<AdmitResult> {
    const added = await this.track(ref);
    const lanes = new Set<string>();
    // A lane can only become blocked between two calls through another writer of this partition (which
    // the epoch fences): a third round is already a sign of that, a fourth an error.
    for (let round = 0; round < 4; round += 1) {
      const call = admitCall(ref, records, { caps: this.caps, epoch, sendPayloadsOf: lanes });
      const result = parseAdmitReply(await this.#run('admit', call), records.length, where('admit', ref));
      if (!('payloadsNeeded' in result)) {
        // The call made the state: an earlier one of this partition may have been lost with its tracked-set entry
        // (a flush, an old snapshot) since this process last added it. Added again at once, not a minute later:
        // before the first marker the tracked set is all that brings the partition to the committer (its audit,
        // its re-drive of expired leases).
        if (result.seenUpTo === -1 && !added) await this.track(ref, true);
        return result;
      }
      for (const lane of result.payloadsNeeded) lanes.add(lane);
    }
    throw new UnexpectedReplyError(`${where('admit', ref)}: lanes kept turning blocked while admitting`);
  }

  /** `markDone` deletes the step results it is given, in its own call. */
  readonly forgetsSteps = true;

  /**
   * Sets done bits; returns how many were newly set. `steps`: records of this partition (their first origin) and
   * their steps, whose results are deleted in the same call, once the bits are set.
   */
  async markDone(ref: PartitionRef, offsets: readonly number[], epoch = 0, steps: readonly RecordSteps[] = []): Promise<number> {
    if (offsets.length === 0) return 0;
    const call = markCall(partitionKeys(ref), offsets, epoch, steps.length === 0 ? [] : stepBlocks(ref, steps));
    return parseMarkReply(await this.#run('mark', call), where('mark', ref));
  }

  /** Reads the frontier (and trims whole bytes below it); `undefined` if nothing was admitted. */
  async frontier(ref: PartitionRef, options: { trim?: boolean } = {}): Promise<FrontierReading | undefined> {
    const call = frontierCall(partitionKeys(ref), options.trim ?? false);
    return parseFrontierReply(await this.#run('frontier', call), where('frontier', ref));
  }

  /** Blocks a lane on its head and parks later records of it; returns how many were parked. */
  async block(ref: PartitionRef, block: LaneBlock): Promise<number> {
    const call = blockCall(ref, { ...block, nowMs: block.nowMs ?? Date.now() });
    return parseBlockReply(await this.#run('block', call), where('block', ref));
  }

  /** Releases a lane whose head is terminal: returns its next parked record (the new head) or `undefined`. */
  async release(ref: PartitionRef, release: LaneRelease): Promise<ParkedRecord | undefined> {
    const call = releaseCall(ref, { ...release, nowMs: release.nowMs ?? Date.now() });
    return parseReleaseReply(await this.#run('release', call), where('release', ref));
  }

  /**
   * Moves a lane's head, expected at (offset, attempt), to its next attempt and due time, or holds it, or
   * takes its lease off. Throws `NotHeadError` / `StaleAttemptError` when the head is not the one expected.
   */
  async advance(ref: PartitionRef, lane: string, expected: { offset: number; attempt: number }, next: HeadAdvance): Promise<void> {
    const call = advanceCall(ref, lane, expected, next);
    parseAdvanceReply(await this.#run('advance', call), where('advance', ref));
  }

  /**
   * Claims a lane's head, expected at (offset, attempt) and retrying, for one retry copy before it runs: the
   * head check and the taking in one atomic step, so two copies of one head never run at once.
   */
  async claimHead(ref: PartitionRef, lane: string, expected: { offset: number; attempt: number }, claim: HeadClaimRequest): Promise<HeadClaim> {
    const call = claimCall(partitionKeys(ref), lane, expected, claim);
    return parseClaimReply(await this.#run('claim', call), where('claim', ref), lane);
  }

  /**
   * Unordered mode's check before a retry copy runs, by (origin, attempt): `stale` when the record is terminal, a
   * later attempt ran, or another copy of this attempt ran; otherwise the attempt is taken by this copy. `done`
   * records the record as terminal after its copy succeeded.
   */
  async claimCopy(origin: PartitionRef, claim: CopyClaimRequest): Promise<CopyClaim> {
    const reply = await this.#run('claimCopy', claimCopyCall(origin, claim));
    return parseTakenReply(reply, 'claimCopy') === undefined ? 'claimed' : 'stale';
  }

  /** The partition's state as `audit-2.lua` reads it: counters against data, lowest lane head, generation. */
  audit(ref: PartitionRef): Promise<PartitionAudit> {
    return auditPartition(this.#redis, ref, this.limits);
  }

  /**
   * Whether the completion group is known to hold a marker naming the partition's state (docs/durability.md, "The first minute"):
   * `false` in its first minute, before the committer's first commit of it landed, or when no state exists.
   */
  async durablyMarked(ref: PartitionRef): Promise<boolean> {
    const [generation, marked] = await bounded(this.#redis.hmget(partitionKeys(ref).meta, 'gen', 'marked'), 'HMGET marked', this.limits);
    if (generation !== null && generation === marked) return true;
    // Asked in the partition's first minute (a watch copy, a held head): only the committer's audit of the partition
    // ends that minute, and a loss may have taken its tracked-set entry; without it the watch copies would come back
    // every 5 s until the next admission re-tracks it.
    await trackPartitions(this.#redis, [ref], this.limits);
    return false;
  }

  /** Redis `WAIT` on every master this connection writes to; the fewest replicas that acknowledged. */
  async waitForReplicas(replicas: number, timeoutMs: number): Promise<number> {
    const nodes = 'nodes' in this.#redis ? this.#redis.nodes('master') : [this.#redis];
    const counts = await Promise.all(nodes.map((node) => bounded(node.wait(replicas, timeoutMs), 'WAIT replicas', { timeoutMs: timeoutMs + DEFAULT_CALL_TIMEOUT_MS })));
    return Math.min(...counts);
  }

  /** What a retry copy whose lane is free reads to judge a loss: the partition's audit and its origin's done bit. */
  originState(ref: PartitionRef, origin: number): Promise<OriginState> {
    return readOriginState(this.#redis, ref, origin, this.limits);
  }

  /** Reports a loss a retry copy found (its origin) in the partition's `meta`, for the committer to recover it. */
  reportLoss(ref: PartitionRef, origin: number): Promise<void> {
    return reportLoss(this.#redis, ref, { origin, nowMs: this.#now() }, this.limits);
  }

  /** The head of a blocked lane, or `undefined` when the lane is free: one read, atomic by itself. */
  async laneHead(ref: PartitionRef, lane: string): Promise<LaneHead | undefined> {
    const entry = await bounded(this.#redis.hget(partitionKeys(ref).lanes, lane), 'HGET lane head', this.limits);
    return entry === null ? undefined : parseLaneHead(entry, where('lane head', ref), lane);
  }

  /** Every blocked lane of a partition with its head (for the committer's re-drive and the operator commands). */
  async laneHeads(ref: PartitionRef): Promise<LaneHead[]> {
    const entries = await bounded(this.#redis.hgetall(partitionKeys(ref).lanes), 'HGETALL lane heads', this.limits);
    return Object.entries(entries).map(([lane, entry]) => parseLaneHead(entry, where('lane heads', ref), lane));
  }

  /** The first record of a lane's park list (a head drained inline keeps its payload there), if any. */
  async firstParked(ref: PartitionRef, lane: string): Promise<ParkedRecord | undefined> {
    const entry = await bounded(this.#redis.lindex(parkKey(ref, lane), 0), 'LINDEX park list', this.limits);
    if (entry === null) return undefined;
    const cut = entry.indexOf(':');
    return { offset: Number(entry.slice(0, cut)), payload: entry.slice(cut + 1) };
  }

  /** The partitions a group has admitted records on, for the committer. */
  async trackedPartitions(group: string): Promise<PartitionRef[]> {
    return readTrackedPartitions(this.#redis, group, this.limits);
  }

  /** Adds the partition to the tracked set unless this process did within `TRACK_REFRESH_MS` (or `force`); says whether it did. */
  private async track(ref: PartitionRef, force = false): Promise<boolean> {
    const id = `${ref.group}\n${trackedMember(ref)}`;
    const at = this.#tracked.get(id);
    const now = this.#now();
    if (!force && at !== undefined && now - at < TRACK_REFRESH_MS) return false;
    await trackPartitions(this.#redis, [ref], this.limits);
    this.#tracked.set(id, now);
    return true;
  }
}
