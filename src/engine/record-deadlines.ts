/**
 * Deadlines of running records with one timer per invocation, not one per record.
 *
 * Every record of an invocation gets the same timeout (`recordTimeoutMs`), so deadlines come in the order
 * records start: the running records form a queue sorted by deadline, and one timer set for the queue's
 * head is enough. The invocation's hard stop expires every running record at once. A record's `AbortSignal`
 * is made only if its handler asks for it (`ctx.signal`): most never do, and an `AbortSignal.timeout` plus
 * `AbortSignal.any` per record was the largest cost of the run path (their weak references keep the garbage
 * collector busy).
 */

/** Why a running record stops being waited for: its own timeout, or the invocation's hard stop. */
export type ExpiryReason = () => unknown;

/**
 * One running record's deadline. `race` waits for the handler's work unless the deadline comes first; the
 * work itself goes on detached (a promise cannot be cancelled) and its late outcome is ignored.
 */
export class RecordDeadline {
  /** `performance.now()` at which the record times out. */
  readonly dueAt: number;
  #finished = false;
  #reason: unknown = undefined;
  #expired = false;
  #controller: AbortController | undefined = undefined;
  #reject: ((reason: unknown) => void) | undefined = undefined;

  constructor(dueAt: number) {
    this.dueAt = dueAt;
  }

  /** Aborts when the record times out or the invocation stops; made on first use. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#expired) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  get expired(): boolean {
    return this.#expired;
  }

  /** What the record failed with when its deadline came. */
  get reason(): unknown {
    return this.#reason;
  }

  get finished(): boolean {
    return this.#finished;
  }

  /** Settles like `work`, unless the deadline comes first: then rejects with the expiry reason. */
  race<T>(work: PromiseLike<T>): Promise<T> {
    if (this.#expired) {
      // A rejection of the abandoned work must not surface as unhandled.
      work.then(undefined, () => undefined);
      return Promise.reject(this.#reason);
    }
    return new Promise<T>((resolve, reject) => {
      this.#reject = reject;
      work.then(resolve, reject);
    });
  }

  /** The deadline came: the record's signal aborts and `race` rejects with `reason`. Idempotent. */
  expire(reason: unknown): void {
    if (this.#expired || this.#finished) return;
    this.#expired = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
    const reject = this.#reject;
    this.#reject = undefined;
    reject?.(reason);
  }

  /** The record settled: its deadline no longer matters. */
  finish(): void {
    this.#finished = true;
    this.#reject = undefined;
  }
}

/**
 * The deadlines of an invocation's running records: a queue in start order (hence deadline order, one
 * timeout for all) and one timer for its head.
 *
 * @example
 * const deadlines = new RecordDeadlines(60_000, () => new RecordTimeoutError('record timed out after 60000 ms'));
 * const deadline = deadlines.start();
 * try { await deadline.race(handler(record, ctx)); } finally { deadline.finish(); }
 * deadlines.expireAll(new DeadlineError()); // the hard stop
 * deadlines.close();
 */
export class RecordDeadlines {
  readonly timeoutMs: number;
  readonly #timeoutReason: ExpiryReason;
  #queue: RecordDeadline[] = [];
  #head = 0;
  #timer: NodeJS.Timeout | undefined = undefined;
  #timerAt = Infinity;
  /** Set by `expireAll`: records started after it are expired at once with it. */
  #stopped: { reason: unknown } | undefined = undefined;

  constructor(timeoutMs: number, timeoutReason: ExpiryReason) {
    // Node's timers fire at once above 2^31-1 ms: a longer limit is no limit at all here.
    this.timeoutMs = timeoutMs < 2_147_483_647 ? Math.max(0, timeoutMs) : Infinity;
    this.#timeoutReason = timeoutReason;
  }

  /** Starts the deadline of a record starting now. */
  start(): RecordDeadline {
    const deadline = new RecordDeadline(performance.now() + this.timeoutMs);
    if (this.#stopped !== undefined) {
      deadline.expire(this.#stopped.reason);
      return deadline;
    }
    // Queued even without a timeout of its own: the hard stop (`expireAll`) must still reach it.
    this.#compact();
    this.#queue.push(deadline);
    if (this.#timer === undefined && this.timeoutMs !== Infinity) this.#arm(deadline.dueAt);
    return deadline;
  }

  /** Expires every running record and every one started from now on (the invocation's hard stop). */
  expireAll(reason: unknown): void {
    this.#stopped = { reason };
    const queue = this.#queue;
    this.#queue = [];
    for (let i = this.#head; i < queue.length; i += 1) queue[i]!.expire(reason);
    this.#head = 0;
    this.close();
  }

  /** Stops the timer (the invocation is over). */
  close(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }

  #arm(at: number): void {
    this.#timerAt = at;
    // +1: a timer may fire a fraction of a millisecond early by performance.now().
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, Math.ceil(at - performance.now())) + 1);
  }

  #fire(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = performance.now();
    while (this.#head < this.#queue.length) {
      const deadline = this.#queue[this.#head]!;
      if (deadline.finished || deadline.expired) {
        this.#head += 1;
        continue;
      }
      if (deadline.dueAt > now) break;
      this.#head += 1;
      deadline.expire(this.#timeoutReason());
    }
    this.#compact();
    const next = this.#queue[this.#head];
    if (next !== undefined && next.dueAt < this.#timerAt) this.#arm(next.dueAt);
  }

  /** Drops finished records from the head, and the consumed part of the queue once it is large. */
  #compact(): void {
    while (this.#head < this.#queue.length && this.#queue[this.#head]!.finished) this.#head += 1;
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }
}
