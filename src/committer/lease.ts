import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../completion/scripts';
import { extendCommitterLease, releaseCommitterLease, takeCommitterLease } from '../completion/committer-state';
import { describeValue } from '../errors';
import { LeaseLostError } from './errors';
import { committerLeaseKey } from '../completion/keys';

/**
 * A per-group lease that serializes committer runs. Kafka's offset commit is not compare-and-set, so two
 * overlapping runs (two scheduled invocations, two processes) could each fetch, plan and commit, and the
 * slower one would write an older frontier over a newer one. Holding the lease from "fetch what is
 * committed" to "commit" makes each run's plan current.
 *
 * The lease is `SET key token NX PX ttl`; it is extended and released only by the run whose token it
 * holds (compare-and-expire / compare-and-delete scripts). Its time to live must be longer than one
 * commit call: a run re-checks the lease before every commit and refuses to commit once it is lost.
 *
 * @example
 * const lease = await CommitterLease.acquire(redis, 'orders', 60_000);
 * if (lease === undefined) return; // another run holds it
 * try {
 *   await lease.renew(); // before each commit
 * } finally {
 *   await lease.release();
 * }
 */
export class CommitterLease {
  readonly key: string;
  readonly token: string;
  readonly ttlMs: number;
  readonly #redis: RedisClient;
  readonly #group: string;
  readonly #now: () => number;
  // A conservative local view of the expiry: measured from before the request that set the TTL was sent.
  #heldUntilMs: number;

  private constructor(redis: RedisClient, group: string, token: string, ttlMs: number, now: () => number, heldUntilMs: number) {
    this.#redis = redis;
    this.#group = group;
    this.key = committerLeaseKey(group);
    this.token = token;
    this.ttlMs = ttlMs;
    this.#now = now;
    this.#heldUntilMs = heldUntilMs;
  }

  /** Takes the group's lease; `undefined` if another run holds it. */
  static async acquire(
    redis: RedisClient,
    group: string,
    ttlMs: number,
    now: () => number = Date.now,
  ): Promise<CommitterLease | undefined> {
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 1) {
      throw new RangeError(`Expected \`ttlMs\` to be a positive integer, got ${describeValue(ttlMs)}`);
    }
    const token = randomUUID();
    const sentAt = now();
    if (!(await takeCommitterLease(redis, group, token, ttlMs))) return undefined;
    return new CommitterLease(redis, group, token, ttlMs, now, sentAt + ttlMs);
  }

  /** Milliseconds the lease is certainly still held for (0 once it may have expired). */
  remainingMs(): number {
    return Math.max(0, this.#heldUntilMs - this.#now());
  }

  /** Extends the lease to a full time to live again; throws `LeaseLostError` if this run no longer holds it. */
  async renew(): Promise<void> {
    const sentAt = this.#now();
    if (!(await extendCommitterLease(this.#redis, this.#group, this.token, this.ttlMs))) {
      throw new LeaseLostError(`committer lease ${this.key} was lost (expired or taken by another run)`);
    }
    this.#heldUntilMs = sentAt + this.ttlMs;
  }

  /**
   * Throws `LeaseLostError` if the lease may have expired by now: called after a commit, it tells that
   * the commit may have landed outside the lease, so an overlapping run's commit may have been overwritten.
   */
  assertStillHeld(what: string): void {
    if (this.remainingMs() === 0) {
      throw new LeaseLostError(
        `committer lease ${this.key} (ttl ${this.ttlMs} ms) may have expired before ${what} finished; ` +
          'raise the lease time to live above the longest commit',
      );
    }
  }

  /** Releases the lease if this run still holds it; returns whether it did. */
  async release(): Promise<boolean> {
    const released = await releaseCommitterLease(this.#redis, this.#group, this.token);
    this.#heldUntilMs = 0;
    return released;
  }
}
