/**
 * The one deadline helper: every time limit of the framework (a Redis call, a hand-off write, a record's
 * run, the invocation's hard stop) is built here: an `AbortSignal` on `AbortSignal.any`, or, for the many short
 * calls of the record path, `withinDeadline` (shared timers, one listener per signal).
 *
 * Each bounded piece of work gets a signal of its own, derived from the shared ones: `AbortSignal.any`
 * links it to its parents without adding an event listener to them, so hundreds of concurrent calls
 * bounded by one invocation signal never pile listeners on it (Node warns past 10:
 * MaxListenersExceededWarning), and a finished call leaves nothing behind on the parent.
 */

/**
 * A signal that aborts after `timeoutMs` or as soon as any of `parents` aborts (whichever comes first).
 * `timeoutMs` undefined: no timer of its own.
 *
 * @example
 * const signal = deadlineSignal(5_000, invocationSignal);
 * await untilAborted(redis.get(key), signal, () => new Error('no answer within 5 s'));
 */
export function deadlineSignal(timeoutMs: number | undefined, ...parents: ReadonlyArray<AbortSignal | undefined>): AbortSignal {
  const signals = parents.filter((signal): signal is AbortSignal => signal !== undefined);
  // Node's timers fire at once above 2^31-1 ms: a longer limit is no limit at all here.
  if (timeoutMs !== undefined && timeoutMs < 2_147_483_647) signals.push(AbortSignal.timeout(Math.max(0, Math.ceil(timeoutMs))));
  return AbortSignal.any(signals);
}

/**
 * Settles like `work`, unless `signal` aborts first: then rejects with `reason(signal.reason)`. The work
 * itself goes on (a promise cannot be cancelled); its late outcome is ignored.
 *
 * @example
 * await untilAborted(handlerRun, recordSignal, (why) => why);
 */
export function untilAborted<T>(work: PromiseLike<T>, signal: AbortSignal, reason: (signalReason: unknown) => unknown): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) {
      reject(reason(signal.reason));
      // A rejection of the abandoned work must not surface as unhandled.
      work.then(undefined, () => undefined);
      return;
    }
    const onAbort = (): void => reject(reason(signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * A call bounded by `withinDeadline`, until it settles or is given up. A class, not closures: one is made per Redis
 * call, and a bundle keeping function names would name every closure made.
 */
class BoundedCall<T> {
  settled = false;
  readonly dueAt: number;
  // Dropped once settled: a settled call may wait in its time limit's queue until the queue's head is due, and must
  // not keep its answer (an admission's reply can be large) alive meanwhile.
  #resolve: ((value: T) => void) | undefined;
  #reject: ((error: unknown) => void) | undefined;
  #reason: ((timedOut: boolean) => unknown) | undefined;
  /** The calls of the signal bounding this one (none without a signal). */
  calls: Set<BoundedCall<unknown>> | undefined = undefined;

  constructor(dueAt: number, resolve: (value: T) => void, reject: (error: unknown) => void, reason: (timedOut: boolean) => unknown) {
    this.dueAt = dueAt;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#reason = reason;
  }

  answered(value: T): void {
    const resolve = this.#resolve;
    if (this.#settle()) resolve!(value);
  }

  failed(error: unknown): void {
    const reject = this.#reject;
    if (this.#settle()) reject!(error);
  }

  giveUp(timedOut: boolean): void {
    const reject = this.#reject;
    const reason = this.#reason;
    if (this.#settle()) reject!(reason!(timedOut));
  }

  /** Settles the call now: true if it had not settled yet (no object made per call: every Redis call has one). */
  #settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.calls?.delete(this as BoundedCall<unknown>);
    this.calls = undefined;
    this.#resolve = this.#reject = this.#reason = undefined;
    return true;
  }
}

/**
 * The bounded calls of one time limit, in the order they started (so in deadline order): one timer, set for the
 * first call still running, gives up every call whose time passed.
 */
class TimeLimitQueue {
  readonly #queue: Array<BoundedCall<unknown>> = [];
  #head = 0;
  #timer: NodeJS.Timeout | undefined = undefined;

  add(call: BoundedCall<unknown>): void {
    while (this.#head < this.#queue.length && this.#queue[this.#head]!.settled) this.#head += 1;
    if (this.#head > 1_024 && this.#head * 2 > this.#queue.length) {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
    this.#queue.push(call);
    if (this.#timer === undefined) this.#arm(call.dueAt);
  }

  #arm(at: number): void {
    // +1: a timer may fire a fraction of a millisecond early by performance.now(). Unref'd, as AbortSignal.timeout's.
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, Math.ceil(at - performance.now())) + 1);
    this.#timer.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    const now = performance.now();
    while (this.#head < this.#queue.length) {
      const call = this.#queue[this.#head]!;
      if (!call.settled && call.dueAt > now) break;
      this.#head += 1;
      call.giveUp(true);
    }
    if (this.#head === this.#queue.length) {
      this.#queue.length = 0;
      this.#head = 0;
    } else {
      this.#arm(this.#queue[this.#head]!.dueAt);
    }
  }
}

const timeLimits = new Map<number, TimeLimitQueue>();
/** The calls each signal bounds, given up together by its one listener. */
const signalled = new WeakMap<AbortSignal, Set<BoundedCall<unknown>>>();

function callsOf(signal: AbortSignal): Set<BoundedCall<unknown>> {
  let calls = signalled.get(signal);
  if (calls === undefined) {
    const bounded = new Set<BoundedCall<unknown>>();
    signalled.set(signal, (calls = bounded));
    signal.addEventListener('abort', () => {
      for (const one of [...bounded]) one.giveUp(false);
    }, { once: true });
  }
  return calls;
}

/**
 * Settles like `work`, unless `timeoutMs` passes or `signal` aborts first: then rejects with `reason(timedOut)`.
 * What `untilAborted(work, deadlineSignal(timeoutMs, signal), …)` does, for the many short calls of the record path
 * (every Redis call): a call gets no signal, timer or listener of its own (`AbortSignal.timeout` and
 * `AbortSignal.any` per call cost more than the call). The calls of one time limit share one timer, and a signal
 * gets one listener for every call it bounds. The work itself goes on; its late outcome is ignored.
 *
 * @example
 * await withinDeadline(redis.get(key), 5_000, invocationSignal, (timedOut) => new Error(timedOut ? 'no answer' : 'stopped'));
 */
export function withinDeadline<T>(
  work: Promise<T>,
  timeoutMs: number | undefined,
  signal: AbortSignal | undefined,
  reason: (timedOut: boolean) => unknown,
): Promise<T> {
  if (signal?.aborted === true) {
    // A rejection of the abandoned work must not surface as unhandled.
    work.then(undefined, () => undefined);
    return Promise.reject(reason(false));
  }
  if (timeLimit(timeoutMs) === undefined && signal === undefined) return work;
  return new Promise<T>((resolve, reject) => {
    const call = deadlineCall({ timeoutMs, signal }, { resolve, reject, reason });
    work.then((value) => call.answered(value), (error: unknown) => call.failed(error));
  });
}

/** A call bounded by `deadlineCall`: settled by its owner, unless it was given up first. */
export interface DeadlineCall<T> {
  /** Settled: answered, failed or given up. */
  readonly settled: boolean;
  /** Resolves the call, unless it settled already. */
  answered(value: T): void;
  /** Rejects the call with `error`, unless it settled already. */
  failed(error: unknown): void;
}

/** How a bounded call settles: its promise's `resolve` and `reject`, and the error of a call given up. */
export interface DeadlineCallbacks<T> {
  readonly resolve: (value: T) => void;
  readonly reject: (error: unknown) => void;
  readonly reason: (timedOut: boolean) => unknown;
}

/** Node's timers fire at once above 2^31-1 ms: a longer limit is no limit at all here. */
function timeLimit(timeoutMs: number | undefined): number | undefined {
  return timeoutMs !== undefined && timeoutMs < 2_147_483_647 ? Math.max(0, Math.ceil(timeoutMs)) : undefined;
}

/**
 * `withinDeadline` for a call its owner settles itself rather than through a promise of its own (one promise less
 * per call, for the hand-off writer's writes): the owner calls `answered` or `failed`; if `timeoutMs` passes or
 * `signal` aborts first, `reject(reason(timedOut))` is called instead, and the owner's later answer is ignored.
 * `signal` must not have aborted yet.
 *
 * @example
 * return new Promise((resolve, reject) => {
 *   const call = deadlineCall({ timeoutMs: 5_000, signal }, { resolve, reject, reason: (timedOut) => new Error(timedOut ? 'no answer' : 'stopped') });
 *   pending.push(call); // later: call.answered(reply)
 * });
 */
export function deadlineCall<T>(
  { timeoutMs, signal }: { readonly timeoutMs: number | undefined; readonly signal: AbortSignal | undefined },
  { resolve, reject, reason }: DeadlineCallbacks<T>,
): DeadlineCall<T> {
  const limit = timeLimit(timeoutMs);
  const call = new BoundedCall<T>(limit === undefined ? Infinity : performance.now() + limit, resolve, reject, reason);
  if (limit !== undefined) {
    let queue = timeLimits.get(limit);
    if (queue === undefined) timeLimits.set(limit, (queue = new TimeLimitQueue()));
    queue.add(call as BoundedCall<unknown>);
  }
  if (signal !== undefined) (call.calls = callsOf(signal)).add(call as BoundedCall<unknown>);
  return call;
}

/**
 * Waits `ms`, or less if `signal` aborts (resolves either way: the caller looks at the clock and the signal).
 *
 * @example
 * await sleep(dueAtMs - clock.now(), stopSignal);
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted === true) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.min(ms, 2_147_483_647));
    signal?.addEventListener('abort', done, { once: true });
  });
}
