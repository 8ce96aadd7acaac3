/**
 * The history backend on the real Redis completion store (test/support/history-rig.ts): the real scripts, and the
 * real committer run (`runCommitter`, with its lease, trim and readings) committing to an in-memory completion
 * group. Used by test/integration/histories.test.ts and `npm run fuzz:histories -- --redis`.
 */
import type { Redis } from 'ioredis';
import { runCommitter } from '../../src/committer/committer';
import type { CommitLease, OffsetCommitter } from '../../src/committer/offset-committer';
import type { CommitMove, CommittedOffset } from '../../src/committer/types';
import { CompletionStore, parkKey, partitionKeys, type PartitionCaps, type PartitionRef } from '../../src/completion';
import { completionGroupId, escapeName } from '../../src/options/names';
import { uniqueName } from '../integration/support/stack';
import { runHistory, tpKey, type HistoryBackend, type HistorySpec, type HistoryStats, type RunOptions } from './history-rig';

/** The completion group `<group>.lanes`, kept in memory: what Kafka would hold. */
class MemoryOffsetCommitter implements OffsetCommitter {
  readonly groupId: string;
  readonly offsets = new Map<string, { topic: string; partition: number; offset: number; metadata?: string }>();

  constructor(group: string) {
    this.groupId = completionGroupId(group);
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
      if (move.to <= (before ?? -1) && !markerOnly) throw new RangeError(`backward or empty move ${JSON.stringify(move)} over ${String(before)}`);
      this.offsets.set(key, { topic: move.topic, partition: move.partition, offset: move.to, ...(move.metadata === undefined ? {} : { metadata: move.metadata }) });
    }
  }
}

/** A history's group on the real store; `cleanUp` removes every key of the group. */
export class RedisBackend implements HistoryBackend {
  readonly group = uniqueName('hist');
  readonly source = 'orders';
  readonly store: CompletionStore;
  readonly #redis: Redis;
  readonly #committer: MemoryOffsetCommitter;

  constructor(redis: Redis, caps: Partial<PartitionCaps> = {}) {
    this.#redis = redis;
    this.store = new CompletionStore(redis, caps);
    this.#committer = new MemoryOffsetCommitter(this.group);
  }

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

  async commit(nowMs: number): Promise<Map<string, number>> {
    const result = await runCommitter({ store: this.store, group: this.group, committer: this.#committer, now: () => nowMs });
    if (result.skipped !== undefined) throw new Error(`committer run skipped: ${result.skipped}`);
    // Redis lost nothing in these histories: a loss found is a false alarm of the durability checks.
    if (result.losses !== undefined) throw new Error(`committer run found a loss Redis never had: ${JSON.stringify(result.losses)}`);
    return new Map([...this.#committer.offsets].map(([key, c]) => [key, c.offset]));
  }

  async cleanUp(): Promise<void> {
    const pattern = `{kl:${escapeName(this.group)}[:}]*`;
    let cursor = '0';
    do {
      const [next, keys] = await this.#redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1_000);
      cursor = next;
      if (keys.length > 0) await this.#redis.unlink(...keys);
    } while (cursor !== '0');
  }
}

/** Runs a history on a group of its own on `redis`, and removes the group's keys after it. */
export async function runOnRedis(redis: Redis, spec: HistorySpec, run: RunOptions = {}, caps: Partial<PartitionCaps> = spec.caps ?? {}): Promise<HistoryStats> {
  const backend = new RedisBackend(redis, caps);
  try {
    return await runHistory(spec, backend, run);
  } finally {
    await backend.cleanUp();
  }
}
