/**
 * Gathers calls made in one turn of the event loop and runs them as one call per hash tag: the records that reach a
 * step at about the same time (those started together, those whose steps finished together) share one round trip.
 */
export class TagBatches<I, O> {
  readonly #run: (items: readonly I[]) => Promise<readonly O[]>;
  #pending = new Map<string, Array<{ item: I; resolve: (value: O) => void; reject: (error: unknown) => void }>>();
  #scheduled = false;

  /** `run` gets the items of one tag and answers one result per item, in order. */
  constructor(run: (items: readonly I[]) => Promise<readonly O[]>) {
    this.#run = run;
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
    for (const queue of pending.values()) {
      this.#run(queue.map((entry) => entry.item)).then(
        (results) => queue.forEach((entry, i) => entry.resolve(results[i]!)),
        (error: unknown) => queue.forEach((entry) => entry.reject(error)),
      );
    }
  }
}
