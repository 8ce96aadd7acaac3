/**
 * The history backend on the real Redis completion store (test/support/history-rig.ts): the real scripts, and the
 * real committer run (`runCommitter`, with its lease, trim, readings, loss checks and recovery) committing to an
 * in-memory completion group. Redis loses state for `lose` steps: a snapshot of the group's keys (DUMP) restored,
 * one key deleted, or all of them. Used by test/integration/histories.test.ts and `npm run fuzz:histories -- --redis`.
 */
import type { Redis } from 'ioredis';
import { runCommitter } from '../../src/committer/committer';
import type { CommitLease, OffsetCommitter } from '../../src/committer/offset-committer';
import type { CommitMove, CommittedOffset } from '../../src/committer/types';
import { CompletionStore, parkKey, partitionKeys } from '../../src/completion';
import type { PartitionCaps, PartitionRef } from '../../src/ports/partition';
import { completionGroupId, escapeName } from '../../src/options/names';
import { uniqueName } from '../integration/support/stack';
import type { RecordLog } from '../../src/recovery/read-range';
import { decodeMarker } from '../../src/durability/marker';
import { runHistory, tpKey, type CommitOutcome, type HistoryBackend, type HistoryRecovery, type HistorySpec, type HistoryStats, type LossPort, type RunOptions } from './history-rig';

/** The completion group `<group>.lanes`, kept in memory: what Kafka would hold. */
class MemoryOffsetCommitter implements OffsetCommitter {
  readonly groupId: string;
  readonly offsets = new Map<string, { topic: string; partition: number; offset: number; metadata?: string }>();
  readonly #markers: boolean;

  /** `markers: false`: a broken committer, whose commits lose their metadata (no durable marker survives). */
  constructor(group: string, markers = true) {
    this.groupId = completionGroupId(group);
    this.#markers = markers;
  }

  async fetchCommitted(topics: readonly string[]): Promise<CommittedOffset[]> {
    return [...this.offsets.values()].filter((c) => topics.includes(c.topic));
  }

  async fetchAllCommitted(): Promise<CommittedOffset[]> {
    return [...this.offsets.values()];
  }

  async commit(moves: readonly CommitMove[], lease?: CommitLease): Promise<void> {
    await lease?.renew();
    for (const move of moves) {
      const key = tpKey(move.topic, move.partition);
      const before = this.offsets.get(key)?.offset;
      // A move that only writes a new durable marker keeps its offset.
      const markerOnly = move.to === before && move.metadata !== undefined;
      if (move.to <= (before ?? -1) && !markerOnly && move.rewind !== true) throw new RangeError(`backward or empty move ${JSON.stringify(move)} over ${String(before)}`);
      if (markerOnly && !this.#markers) continue;
      this.offsets.set(key, { topic: move.topic, partition: move.partition, offset: move.to, ...(move.metadata === undefined || !this.#markers ? {} : { metadata: move.metadata }) });
    }
  }
}

/**
 * Deliberate breakages, to see that the histories catch them: `reread: false`, a recovery that rebuilds the state
 * without reading the records again (the log reads as empty); `markers: false`, a completion group that keeps no
 * commit metadata (no durable marker survives).
 */
export interface Breakage {
  readonly reread?: boolean;
  readonly markers?: boolean;
}

/** A copy of a group's keys: name and DUMP payload. */
type Snapshot = ReadonlyArray<readonly [string, Buffer]>;

/** A history's group on the real store; `cleanUp` removes every key of the group. */
export class RedisBackend implements HistoryBackend {
  readonly group = uniqueName('hist');
  readonly source = 'orders';
  readonly durable = true;
  readonly store: CompletionStore;
  readonly #redis: Redis;
  readonly #committer: MemoryOffsetCommitter;
  readonly #reread: boolean;
  readonly #markers: boolean;
  #nowMs: number | undefined;

  constructor(redis: Redis, caps: Partial<PartitionCaps> = {}, breakage: Breakage = {}) {
    this.#redis = redis;
    // The store's clock (its tracked-set refresh) is the history's, as the committer runs see it.
    this.store = new CompletionStore(redis, caps, undefined, () => this.#nowMs ?? Date.now());
    this.#committer = new MemoryOffsetCommitter(this.group, breakage.markers ?? true);
    this.#reread = breakage.reread ?? true;
    this.#markers = breakage.markers ?? true;
  }

  readonly losses: LossPort = {
    snapshot: async (): Promise<Snapshot> => {
      const keys = await this.#keys();
      const dumps = await Promise.all(keys.map((key) => this.#redis.dumpBuffer(key)));
      return keys.flatMap((key, i) => (dumps[i] === null ? [] : [[key, dumps[i]!] as const]));
    },
    restore: async (snapshot: unknown): Promise<void> => {
      await this.cleanUp();
      for (const [key, dump] of (snapshot as Snapshot | undefined) ?? []) await this.#redis.restore(key, 0, dump, 'REPLACE');
    },
    loseKey: async (pick: number) => {
      const keys = await this.#keys();
      if (keys.length === 0) return undefined;
      const key = keys[pick % keys.length]!;
      await this.#redis.del(key);
      // `{kl:<group>:<topic>:<partition>}:...`: the partition whose key it is.
      const tag = /^\{kl:[^:]*:([^:]*):(\d+)\}/.exec(key);
      return { key, partition: tag === null ? undefined : { group: this.group, topic: tag[1]!, partition: Number(tag[2]) } };
    },
    loseLanes: async (ref: PartitionRef): Promise<boolean> => (await this.#redis.del(partitionKeys(ref).lanes)) > 0,
    // A committer that keeps no markers (a breakage) would have written one with every commit.
    hasMarker: (topic: string, partition: number): boolean => {
      const entry = this.#committer.offsets.get(tpKey(topic, partition));
      return entry !== undefined && (!this.#markers || decodeMarker(entry.metadata) !== undefined);
    },
    markerSince: (topic: string, partition: number): number | undefined => decodeMarker(this.#committer.offsets.get(tpKey(topic, partition))?.metadata)?.since,
  };

  async doneOffsets(ref: PartitionRef, offsets: readonly number[]): Promise<Set<number>> {
    const keys = partitionKeys(ref);
    const [rawBase, rawHighest] = await this.#redis.hmget(keys.meta, 'base', 'highest');
    if (rawBase === null || rawHighest === null) return new Set();
    const base = Number(rawBase);
    const highest = Number(rawHighest);
    const inside = offsets.filter((o) => o >= base && o <= highest);
    const bits = await Promise.all(inside.map((o) => this.#redis.getbit(keys.bits, o - base)));
    return new Set([...offsets.filter((o) => o < base), ...inside.filter((_, i) => bits[i] === 1)]);
  }

  async parkedOffsets(ref: PartitionRef, lanes: readonly string[]): Promise<Set<number>> {
    const lists = await Promise.all(lanes.map((lane) => this.#redis.lrange(parkKey(ref, lane), 0, -1)));
    return new Set(lists.flat().map((entry) => Number(entry.slice(0, entry.indexOf(':')))));
  }

  async blockedLanes(ref: PartitionRef): Promise<number> {
    return this.#redis.hlen(partitionKeys(ref).lanes);
  }

  async commit(nowMs: number, recovery: HistoryRecovery): Promise<CommitOutcome> {
    this.#nowMs = nowMs;
    const log: RecordLog = this.#reread ? recovery.source : { offsets: recovery.source.offsets, read: async () => [] };
    const result = await runCommitter({
      store: this.store,
      group: this.group,
      committer: this.#committer,
      now: () => nowMs,
      eventSource: recovery.delivered,
      recovery: { parts: { store: new CompletionStore(this.#redis), log, sink: recovery.sink, options: recovery.options, now: () => nowMs }, telemetry: recovery.telemetry },
    });
    if (process.env.HISTORY_DEBUG === "1") console.log(JSON.stringify(result.partitions), JSON.stringify(result.losses), JSON.stringify(await Promise.all((await this.store.trackedPartitions(this.group)).map((r) => this.store.audit(r)))));
    if (result.skipped !== undefined) throw new Error(`committer run skipped: ${result.skipped}`);
    return {
      committed: new Map([...this.#committer.offsets].map(([key, c]) => [key, c.offset])),
      losses: (result.losses ?? []).map((loss) => ({
        topic: loss.topic, partition: loss.partition, reason: loss.reason, recoveredFrom: loss.recovered?.from, rewoundTo: loss.rewoundTo,
        ...(loss.error === undefined ? {} : { error: loss.error }),
      })),
    };
  }

  /** Every key of the group, in name order. */
  async #keys(): Promise<string[]> {
    const pattern = `{kl:${escapeName(this.group)}[:}]*`;
    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await this.#redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1_000);
      cursor = next;
      found.push(...keys);
    } while (cursor !== '0');
    return [...new Set(found)].sort();
  }

  async cleanUp(): Promise<void> {
    const keys = await this.#keys();
    if (keys.length > 0) await this.#redis.unlink(...keys);
  }
}

/** Runs a history on a group of its own on `redis`, and removes the group's keys after it. */
export async function runOnRedis(redis: Redis, spec: HistorySpec, run: RunOptions = {}, caps: Partial<PartitionCaps> = spec.caps ?? {}, breakage: Breakage = {}): Promise<HistoryStats> {
  const backend = new RedisBackend(redis, caps, breakage);
  try {
    return await runHistory(spec, backend, run);
  } finally {
    await backend.cleanUp();
  }
}
