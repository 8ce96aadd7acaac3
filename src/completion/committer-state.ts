import { committerLeaseKey, committerReadingsKey } from './keys';
import { runScript, type RedisClient } from './scripts';

/**
 * The committer's own keys of a group, its Redis calls and nothing else: the lease that serializes its runs
 * (`committer/lease.ts` keeps the rules: the local view of the expiry, when a run must renew or stop) and the readings
 * one run leaves for the next (`committer/state.ts` encodes and decodes them).
 *
 * @example
 * if (await takeCommitterLease(redis, 'orders', token, 60_000)) await releaseCommitterLease(redis, 'orders', token);
 */

/** Takes the group's lease for `token` (`SET NX PX`); `false` when another run holds it. */
export async function takeCommitterLease(redis: RedisClient, group: string, token: string, ttlMs: number): Promise<boolean> {
  return (await redis.set(committerLeaseKey(group), token, 'PX', ttlMs, 'NX')) === 'OK';
}

/** Extends the lease `token` holds to `ttlMs` again (`extend-lease-1.lua`); `false` when it no longer holds it. */
export async function extendCommitterLease(redis: RedisClient, group: string, token: string, ttlMs: number): Promise<boolean> {
  return Number(await runScript(redis, 'extendLease', { keys: [committerLeaseKey(group)], argv: [token, String(ttlMs)] })) === 1;
}

/** Releases the lease if `token` still holds it (`release-lease-1.lua`); whether it did. */
export async function releaseCommitterLease(redis: RedisClient, group: string, token: string): Promise<boolean> {
  return Number(await runScript(redis, 'releaseLease', { keys: [committerLeaseKey(group)], argv: [token] })) === 1;
}

/** The readings hash as stored: `<topic>\n<partition>` to what the previous run saw. */
export function readCommitterReadings(redis: RedisClient, group: string): Promise<Record<string, string>> {
  return redis.hgetall(committerReadingsKey(group));
}

/** Writes readings fields (the run holding the lease). */
export async function writeCommitterReadings(redis: RedisClient, group: string, fields: Record<string, string>): Promise<void> {
  await redis.hset(committerReadingsKey(group), fields);
}

/** The partitions (`<topic>\n<partition>`) the readings hash holds a reading of. */
export function committerReadingFields(redis: RedisClient, group: string): Promise<string[]> {
  return redis.hkeys(committerReadingsKey(group));
}

/** Drops the readings of these partitions (`kafka-lanes reset`). */
export async function dropCommitterReadings(redis: RedisClient, group: string, fields: readonly string[]): Promise<void> {
  if (fields.length > 0) await redis.hdel(committerReadingsKey(group), ...fields);
}
