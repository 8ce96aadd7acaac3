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

/** Settles a record whose deadline came while its work was awaited alone (`handOver`). */
export type ExpiryHandler = (deadline: RecordDeadline) => void;

/**
 * One running record's deadline. `race` waits for the handler's work unless the deadline comes first; the
 * work itself goes on detached (a promise cannot be cancelled) and its late outcome is ignored. Cheaper for the
 * handler itself, run on every record: `handOver`, then await the work alone; should the deadline come first, the
 * deadlines' `onExpiry` settles the record and the awaiting code, once the work settles, finds `expired` and leaves
 * it alone.
 */
export class RecordDeadline {
  /** `performance.now()` at which the record started. */
  readonly startedAt: number;
  /** `performance.now()` at which the record times out. */
  readonly dueAt: number;
  /** What the record is to its runner (the engine's task), handed back with an expiry. */
  readonly subject: unknown;
  #finished = false;
  #reason: unknown = undefined;
  #expired = false;
  #handedOver = false;
  #controller: AbortController | undefined = undefined;
  #reject: ((reason: unknown) => void) | undefined = undefined;
  readonly #onExpiry: ExpiryHandler | undefined;

  constructor(startedAt: number, dueAt: number, subject?: unknown, onExpiry?: ExpiryHandler) {
    this.startedAt = startedAt;
    this.dueAt = dueAt;
    this.subject = subject;
    this.#onExpiry = onExpiry;
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

  /** Whether an expiry from now on is settled by `onExpiry` (`handOver`). */
  get handedOver(): boolean {
    return this.#handedOver;
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

  /**
   * The caller awaits the record's work alone from now on: should the deadline come before `finish`, the
   * deadlines' `onExpiry` settles the record (in a promise turn of its own) and the caller ignores the work's late
   * outcome. Call it only while the deadline has not expired.
   */
  handOver(): void {
    this.#handedOver = true;
  }

  /** The deadline came: the record's signal aborts, `race` rejects with `reason`, `onExpiry` settles a handed-over record. Idempotent. */
  expire(reason: unknown): void {
    if (this.#expired || this.#finished) return;
    this.#expired = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
    const reject = this.#reject;
    this.#reject = undefined;
    reject?.(reason);
    const onExpiry = this.#onExpiry;
    if (this.#handedOver && onExpiry !== undefined) queueMicrotask(() => onExpiry(this));
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
  readonly #onExpiry: ExpiryHandler | undefined;
  #queue: RecordDeadline[] = [];
  #head = 0;
  #timer: NodeJS.Timeout | undefined = undefined;
  #timerAt = Infinity;
  /** Set by `expireAll`: records started after it are expired at once with it. */
  #stopped: { reason: unknown } | undefined = undefined;

  /** `onExpiry`: settles a record handed over (`RecordDeadline.handOver`) whose deadline came. */
  constructor(timeoutMs: number, timeoutReason: ExpiryReason, onExpiry?: ExpiryHandler) {
    // Node's timers fire at once above 2^31-1 ms: a longer limit is no limit at all here.
    this.timeoutMs = timeoutMs < 2_147_483_647 ? Math.max(0, timeoutMs) : Infinity;
    this.#timeoutReason = timeoutReason;
    this.#onExpiry = onExpiry;
  }

  /** Starts the deadline of a record starting now; `subject` is handed back with its expiry. */
  start(subject?: unknown): RecordDeadline {
    const now = performance.now();
    const deadline = new RecordDeadline(now, now + this.timeoutMs, subject, this.#onExpiry);
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
