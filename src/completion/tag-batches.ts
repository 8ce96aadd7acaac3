/**
 * Gathers calls made in one turn of the event loop and runs them as calls per hash tag of at most `maxPerCall`
 * items each: the records that reach a step at about the same time (those started together, those whose steps
 * finished together) share round trips.
 *
 * Why a cap: one call of everything gathered makes every record wait for the whole call (Redis runs it, then its
 * reply comes back in one piece), and meanwhile this process has nothing to do. Several smaller calls of the same
 * turn go out together: the records of the first go on while Redis runs the next, so this process and Redis work
 * side by side instead of in turn.
 */
export class TagBatches<I, O> {
  readonly #run: (items: readonly I[]) => Promise<readonly O[]>;
  readonly #maxPerCall: number;
  #pending = new Map<string, Array<Entry<I, O>>>();
  #scheduled = false;

  /** `run` gets at most `maxPerCall` items of one tag and answers one result per item, in order. */
  constructor(run: (items: readonly I[]) => Promise<readonly O[]>, maxPerCall = Number.POSITIVE_INFINITY) {
    if (!(maxPerCall >= 1)) throw new RangeError(`Expected maxPerCall to be at least 1, got ${maxPerCall}`);
    this.#run = run;
    this.#maxPerCall = maxPerCall;
  }

  add(tag: string, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      let queue = this.#pending.get(tag);
      if (queue === undefined) this.#pending.set(tag, (queue = []));
      queue.push({ item, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        // After the current turn's microtasks: every record started or finishing now has queued its call by then.
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const pending = this.#pending;
    this.#pending = new Map();
    const max = this.#maxPerCall;
    for (const queue of pending.values()) {
      if (queue.length <= max) this.#call(queue);
      else for (let from = 0; from < queue.length; from += max) this.#call(queue.slice(from, from + max));
    }
  }

  #call(entries: ReadonlyArray<Entry<I, O>>): void {
    const items = new Array<I>(entries.length);
    for (let i = 0; i < entries.length; i += 1) items[i] = entries[i]!.item;
    this.#run(items).then(
      (results) => {
        for (let i = 0; i < entries.length; i += 1) entries[i]!.resolve(results[i]!);
      },
      (error: unknown) => {
        for (const entry of entries) entry.reject(error);
      },
    );
  }
}

interface Entry<I, O> {
  readonly item: I;
  readonly resolve: (value: O) => void;
  readonly reject: (error: unknown) => void;
}
