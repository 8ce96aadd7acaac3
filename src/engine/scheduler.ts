/**
 * The lane scheduler: which record may start next. Pure bookkeeping, no I/O, no timers.
 *
 * - At most `concurrency` records run at once, over all partitions.
 * - One record at a time per lane, in offset order: a lane's next record becomes ready only when the
 *   previous one is finished (`finish`), never before.
 * - Among ready records the lowest offset of the partition that waits longest goes first (round-robin
 *   over partitions, so one hot partition cannot starve another and frontiers advance evenly).
 * - Independent records (no lane) are each ready at once.
 */
export interface Task {
  /** `<topic>-<partition>`: lanes are per partition. */
  readonly partitionKey: string;
  /** `undefined`: an independent record. */
  readonly lane: string | undefined;
  readonly offset: number;
}

/** One partition's queues: ready tasks (a min-heap by offset), and per busy lane the tasks waiting behind it. */
class PartitionQueues<T extends Task> {
  readonly ready: T[] = [];
  /** Lanes with a task running or ready, each with the tasks waiting behind it, in offset order. */
  readonly busy = new Map<string, T[]>();

  push(task: T): void {
    const heap = this.ready;
    let i = heap.length;
    heap.push(task);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.offset <= task.offset) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = task;
  }

  pop(): T | undefined {
    const heap = this.ready;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    let i = 0;
    const n = heap.length;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && heap[right]!.offset < heap[left]!.offset ? right : left;
      if (heap[child]!.offset >= last.offset) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
    return top;
  }
}

export class LaneScheduler<T extends Task> {
  readonly concurrency: number;
  #active = 0;
  #pending = 0;
  /** Started tasks that gave their slot back to wait (`leave`), and those waiting to take one again (`rejoin`). */
  readonly #away = new Set<T>();
  readonly #rejoining: Array<() => void> = [];
  readonly #partitions = new Map<string, PartitionQueues<T>>();
  /** Partitions in turn order (round-robin), and whose turn is next. */
  readonly #turn: Array<PartitionQueues<T>> = [];
  #next = 0;
  // The partition of the last lookup: consecutive calls are nearly always for the same one.
  #lastKey: string | undefined = undefined;
  #last: PartitionQueues<T> | undefined = undefined;

  constructor(concurrency: number) {
    this.concurrency = concurrency;
  }

  get activeCount(): number {
    return this.#active;
  }

  /** Tasks not started yet. */
  get pendingCount(): number {
    return this.#pending;
  }

  /** Adds the tasks of one partition, in ascending offset order. */
  add(tasks: readonly T[]): void {
    for (const task of tasks) {
      this.#pending += 1;
      const queues = this.#queues(task.partitionKey);
      if (task.lane === undefined) {
        queues.push(task);
        continue;
      }
      const waiting = queues.busy.get(task.lane);
      if (waiting === undefined) {
        queues.busy.set(task.lane, []);
        queues.push(task);
      } else {
        waiting.push(task);
      }
    }
  }

  /** The next task to start, or `undefined` when at the concurrency limit or nothing is ready. */
  next(): T | undefined {
    if (this.#active >= this.concurrency) return undefined;
    const count = this.#turn.length;
    for (let i = 0; i < count; i += 1) {
      const queues = this.#turn[this.#next]!;
      this.#next = this.#next + 1 >= count ? 0 : this.#next + 1;
      const task = queues.pop();
      if (task !== undefined) {
        this.#active += 1;
        this.#pending -= 1;
        return task;
      }
    }
    return undefined;
  }

  /**
   * A started task no longer runs code of its handler but is not finished (it waits for the broker to acknowledge
   * its outputs): its slot goes to another task, its lane stays held until `finish`.
   */
  release(): void {
    this.#active -= 1;
    this.#handOn();
  }

  /**
   * A started task waits for a time of its own before it runs (a retry copy not due yet): its slot goes to another
   * task meanwhile, its lane stays held. It takes a slot again with `rejoin`, or is finished without one.
   */
  leave(task: T): void {
    this.#active -= 1;
    this.#away.add(task);
    this.#handOn();
  }

  /** A task that left its slot takes one again: at once if one is free, else the next one freed, before any task not started. */
  rejoin(task: T): Promise<void> {
    if (!this.#away.delete(task)) return Promise.resolve();
    if (this.#active < this.concurrency) {
      this.#active += 1;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => this.#rejoining.push(resolve));
  }

  /** A slot was freed: a task rejoining takes it first. */
  #handOn(): void {
    if (this.#active >= this.concurrency) return;
    const rejoin = this.#rejoining.shift();
    if (rejoin === undefined) return;
    this.#active += 1;
    rejoin();
  }

  /** A started task is finished (terminal or handed off): its lane's next task becomes ready. `released`: its slot went already. */
  finish(task: T, released = false): void {
    // `#away` is nearly always empty: a lookup would give every task an identity hash, for nothing.
    if (!released && !(this.#away.size > 0 && this.#away.delete(task))) {
      this.#active -= 1;
      this.#handOn();
    }
    if (task.lane === undefined) return;
    const queues = this.#queues(task.partitionKey);
    const waiting = queues.busy.get(task.lane);
    const following = waiting?.shift();
    if (following === undefined) queues.busy.delete(task.lane);
    else queues.push(following);
  }

  /** Removes and returns the not-started tasks of a lane (its head failed: they get parked). */
  drainLane(partitionKey: string, lane: string): T[] {
    const waiting = this.#partitions.get(partitionKey)?.busy.get(lane);
    if (waiting === undefined || waiting.length === 0) return [];
    const drained = waiting.splice(0);
    this.#pending -= drained.length;
    return drained;
  }

  /** Removes and returns every task not started yet, in offset order per partition (the deadline came). */
  drainAll(): T[] {
    const drained: T[] = [];
    for (const queues of this.#partitions.values()) {
      drained.push(...queues.ready.splice(0));
      for (const waiting of queues.busy.values()) drained.push(...waiting.splice(0));
    }
    this.#pending = 0;
    return drained.sort((a, b) => (a.partitionKey === b.partitionKey ? a.offset - b.offset : a.partitionKey < b.partitionKey ? -1 : 1));
  }

  #queues(partitionKey: string): PartitionQueues<T> {
    if (partitionKey === this.#lastKey) return this.#last!;
    let queues = this.#partitions.get(partitionKey);
    if (queues === undefined) {
      queues = new PartitionQueues<T>();
      this.#partitions.set(partitionKey, queues);
      this.#turn.push(queues);
    }
    this.#lastKey = partitionKey;
    this.#last = queues;
    return queues;
  }
}
