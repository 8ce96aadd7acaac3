import { committerLeaseKey, committerReadingsKey, partitionKeys } from './keys';
import { runScript, type RedisClient } from './scripts';
import type { CallLimits } from '../ports/limits';
import { readTrackedPartitions, trackPartitions } from './tracked';
import type { PartitionRef } from '../ports/partition';

/**
 * The committer's door to Redis for one group: its lease, its readings, the tracked set it reads and completes, the
 * generation it stamps on a partition's state and the mark it sets once its marker landed. The keys and the calls
 * only: the rules stay in `committer/` (`lease.ts`: the local view of the expiry, when a run must renew or stop;
 * `state.ts`: the readings encoded and decoded). Opened by the completion store (`store.committerState(group)`),
 * on its connection; it never hands that connection out.
 *
 * @example
 * const state = store.committerState('orders');
 * if (await state.takeLease(token, 60_000)) await state.releaseLease(token);
 */
export class CommitterState {
  readonly group: string;
  /** The lease's key, for messages. */
  readonly leaseKey: string;
  /** The readings hash's key, for messages. */
  readonly readingsKey: string;
  readonly #redis: RedisClient;
  readonly #limits: CallLimits;

  constructor(redis: RedisClient, group: string, limits: CallLimits = {}) {
    this.#redis = redis;
    this.#limits = limits;
    this.group = group;
    this.leaseKey = committerLeaseKey(group);
    this.readingsKey = committerReadingsKey(group);
  }

  /** Takes the group's lease for `token` (`SET NX PX`); `false` when another run holds it. */
  async takeLease(token: string, ttlMs: number): Promise<boolean> {
    return (await this.#redis.set(this.leaseKey, token, 'PX', ttlMs, 'NX')) === 'OK';
  }

  /** Extends the lease `token` holds to `ttlMs` again (`extend-lease-1.lua`); `false` when it no longer holds it. */
  async extendLease(token: string, ttlMs: number): Promise<boolean> {
    return Number(await runScript(this.#redis, 'extendLease', { keys: [this.leaseKey], argv: [token, String(ttlMs)] })) === 1;
  }

  /** Releases the lease if `token` still holds it (`release-lease-1.lua`); whether it did. */
  async releaseLease(token: string): Promise<boolean> {
    return Number(await runScript(this.#redis, 'releaseLease', { keys: [this.leaseKey], argv: [token] })) === 1;
  }

  /** The readings hash as stored: `<topic>\n<partition>` to what the previous run saw. */
  readings(): Promise<Record<string, string>> {
    return this.#redis.hgetall(this.readingsKey);
  }

  /** Writes readings fields (the run holding the lease). */
  async writeReadings(fields: Record<string, string>): Promise<void> {
    await this.#redis.hset(this.readingsKey, fields);
  }

  /** The partitions (`<topic>\n<partition>`) the readings hash holds a reading of. */
  readingFields(): Promise<string[]> {
    return this.#redis.hkeys(this.readingsKey);
  }

  /** Drops the readings of these partitions (`kafka-lanes reset`). */
  async dropReadings(fields: readonly string[]): Promise<void> {
    if (fields.length > 0) await this.#redis.hdel(this.readingsKey, ...fields);
  }

  /** The partitions the group's tracked set names, sorted (topic, then partition). */
  tracked(): Promise<PartitionRef[]> {
    return readTrackedPartitions(this.#redis, this.group, this.#limits);
  }

  /** Adds partitions to the group's tracked set (one the committer found by its marker alone). */
  track(refs: readonly PartitionRef[]): Promise<void> {
    return trackPartitions(this.#redis, refs);
  }

  /** Stamps a first generation on a partition's state; returns the one it carries now. */
  async stamp(ref: PartitionRef, generation: string): Promise<string> {
    const reply = await runScript(this.#redis, 'stampGeneration', { keys: [partitionKeys(ref).meta], argv: [generation] }, this.#limits);
    return String((reply as unknown[])[1]);
  }

  /**
   * Records that the completion group's marker names the state's generation `generation` (once the commit landed);
   * `false` when the state carries another one (made again since).
   */
  async mark(ref: PartitionRef, generation: string): Promise<boolean> {
    const reply = await runScript(this.#redis, 'setMarked', { keys: [partitionKeys(ref).meta], argv: [generation] }, this.#limits);
    return Number((reply as unknown[])[1]) === 1;
  }
}
