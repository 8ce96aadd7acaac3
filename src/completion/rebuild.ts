import { rebuildRecordsCall, type RebuildChunk } from './args';
import { partitionKeys } from './keys';
import { parkKeysPattern, scanKeys } from './redis-scan';
import { runScript, type RedisClient } from './scripts';
import { trackPartitions } from './tracked';
import type { PartitionRef } from '../ports/partition';

/**
 * The steps of a recovery's rebuild of one partition, one method and one script each (`rebuild-<step>-<keys>.lua`), so
 * a recovery builds no key name and no script argument itself: `fence` (no record admitted from here), `begin` (the
 * state afresh at the durable frontier, the park lists a lost state left behind dropped), `records` (heads and parked
 * records, a chunk at a time), `end` (the fence lifted with a new generation).
 *
 * @example
 * const rebuild = store.rebuild(ref);
 * await rebuild.fence(Date.now() + 60_000);
 */
export class PartitionRebuild {
  readonly #redis: RedisClient;
  readonly #ref: PartitionRef;

  constructor(redis: RedisClient, ref: PartitionRef) {
    this.#redis = redis;
    this.#ref = ref;
  }

  /** A step on the partition's `meta` alone. */
  #onMeta(script: 'rebuildFence' | 'rebuildEnd', argv: readonly string[]): Promise<unknown> {
    return runScript(this.#redis, script, { keys: [partitionKeys(this.#ref).meta], argv: [...argv] });
  }

  /** From here `admit` refuses the partition's records, until `untilMs` or the rebuild's end. */
  async fence(untilMs: number): Promise<void> {
    await this.#onMeta('rebuildFence', [String(untilMs)]);
  }

  /** The state afresh: `start` its base, `highest` its highest admitted offset, born at `born`; old park lists gone. */
  async begin(start: number, highest: number, fenceUntilMs: number, born: number): Promise<void> {
    const parkLists = await scanKeys(this.#redis, parkKeysPattern(this.#ref));
    const keys = partitionKeys(this.#ref);
    const argv = [String(start), String(highest), String(fenceUntilMs), String(born)];
    await runScript(this.#redis, 'rebuildBegin', { keys: [keys.bits, keys.meta, keys.lanes, ...parkLists], argv });
  }

  /**
   * The chunk's offsets `[from, to]`: its records are the records Kafka still has (each with its lane's place in its
   * `lanes`, from 1, or 0 for none), each lane's first one its head, the rest parked; the offsets between them are done.
   */
  async records(chunk: RebuildChunk, nowMs: number): Promise<void> {
    await runScript(this.#redis, 'rebuildRecords', rebuildRecordsCall(this.#ref, chunk, nowMs));
  }

  /** The partition added to its group's tracked set (a rebuilt partition is read by the committer at once). */
  track(): Promise<void> {
    return trackPartitions(this.#redis, [this.#ref]);
  }

  /** The fence lifted, the state stamped with `generation`. */
  async end(generation: string): Promise<void> {
    await this.#onMeta('rebuildEnd', [generation]);
  }
}
