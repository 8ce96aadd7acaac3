/**
 * The one deadline helper: every time limit of the framework (a Redis call, a hand-off write, a record's
 * run, the invocation's hard stop) is an `AbortSignal` built here on `AbortSignal.any`.
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
