import { randomUUID } from 'node:crypto';
import type { CommitterState } from '../completion/committer-state';
import { describeValue } from '../errors';
import { LeaseLostError } from './errors';

/** The lease's calls on the committer state's door. */
export type LeaseCalls = Pick<CommitterState, 'leaseKey' | 'takeLease' | 'extendLease' | 'releaseLease'>;

/**
 * A per-group lease that serializes committer runs. Kafka's offset commit is not compare-and-set, so two
 * overlapping runs (two scheduled invocations, two processes) could each fetch, plan and commit, and the
 * slower one would write an older frontier over a newer one. Holding the lease from "fetch what is
 * committed" to "commit" makes each run's plan current.
 *
 * The lease is `SET key token NX PX ttl` (its calls are the committer state's door, `completion/committer-state.ts`); it is extended and released only by the run whose token it
 * holds (compare-and-expire / compare-and-delete scripts). Its time to live must be longer than one
 * commit call: a run re-checks the lease before every commit and refuses to commit once it is lost.
 *
 * @example
 * const lease = await CommitterLease.acquire(store.committerState('orders'), 60_000);
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
  readonly #state: LeaseCalls;
  readonly #now: () => number;
  // A conservative local view of the expiry: measured from before the request that set the TTL was sent.
  #heldUntilMs: number;

  /** The lease `token` holds, taken by a request sent at `sentAtMs` (on the `now` clock). */
  private constructor(state: LeaseCalls, token: string, taken: { readonly ttlMs: number; readonly now: () => number; readonly sentAtMs: number }) {
    this.#state = state;
    this.key = state.leaseKey;
    this.token = token;
    this.ttlMs = taken.ttlMs;
    this.#now = taken.now;
    this.#heldUntilMs = taken.sentAtMs + taken.ttlMs;
  }

  /** Takes the group's lease; `undefined` if another run holds it. */
  static async acquire(
    state: LeaseCalls,
    ttlMs: number,
    now: () => number = Date.now,
  ): Promise<CommitterLease | undefined> {
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 1) {
      throw new RangeError(`Expected \`ttlMs\` to be a positive integer, got ${describeValue(ttlMs)}`);
    }
    const token = randomUUID();
    const sentAtMs = now();
    if (!(await state.takeLease(token, ttlMs))) return undefined;
    return new CommitterLease(state, token, { ttlMs, now, sentAtMs });
  }

  /** Milliseconds the lease is certainly still held for (0 once it may have expired). */
  remainingMs(): number {
    return Math.max(0, this.#heldUntilMs - this.#now());
  }

  /** Extends the lease to a full time to live again; throws `LeaseLostError` if this run no longer holds it. */
  async renew(): Promise<void> {
    const sentAt = this.#now();
    if (!(await this.#state.extendLease(this.token, this.ttlMs))) {
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
    const released = await this.#state.releaseLease(this.token);
    this.#heldUntilMs = 0;
    return released;
  }
}
