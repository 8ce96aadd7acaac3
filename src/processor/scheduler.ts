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

export class LaneScheduler<T extends Task> {
  readonly concurrency: number;
  #active = 0;
  // Per partition: a queue of ready tasks (heads of lanes and independent records), kept in offset order.
  readonly #ready = new Map<string, T[]>();
  // Per lane (partition + lane id): the tasks waiting behind the running or ready head, in offset order.
  readonly #waiting = new Map<string, T[]>();
  // Lanes that have a task running or ready.
  readonly #busyLanes = new Set<string>();
  #turn: string[] = [];
  #pending = 0;

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
      if (task.lane === undefined) {
        this.#pushReady(task);
        continue;
      }
      const laneKey = `${task.partitionKey}\n${task.lane}`;
      if (this.#busyLanes.has(laneKey)) {
        const queue = this.#waiting.get(laneKey);
        if (queue === undefined) this.#waiting.set(laneKey, [task]);
        else queue.push(task);
      } else {
        this.#busyLanes.add(laneKey);
        this.#pushReady(task);
      }
    }
  }

  /** The next task to start, or `undefined` when at the concurrency limit or nothing is ready. */
  next(): T | undefined {
    if (this.#active >= this.concurrency) return undefined;
    for (let i = 0; i < this.#turn.length; i += 1) {
      const partitionKey = this.#turn.shift()!;
      this.#turn.push(partitionKey);
      const queue = this.#ready.get(partitionKey);
      const task = queue?.shift();
      if (task !== undefined) {
        this.#active += 1;
        this.#pending -= 1;
        return task;
      }
    }
    return undefined;
  }

  /** A started task is finished (terminal or handed off): its lane's next task becomes ready. */
  finish(task: T): void {
    this.#active -= 1;
    if (task.lane === undefined) return;
    const laneKey = `${task.partitionKey}\n${task.lane}`;
    const queue = this.#waiting.get(laneKey);
    const following = queue?.shift();
    if (queue !== undefined && queue.length === 0) this.#waiting.delete(laneKey);
    if (following === undefined) this.#busyLanes.delete(laneKey);
    else this.#pushReady(following);
  }

  /** Removes and returns the not-started tasks of a lane (its head failed: they get parked). */
  drainLane(partitionKey: string, lane: string): T[] {
    const laneKey = `${partitionKey}\n${lane}`;
    const drained = this.#waiting.get(laneKey) ?? [];
    this.#waiting.delete(laneKey);
    this.#pending -= drained.length;
    return drained;
  }

  /** Removes and returns every task not started yet, in offset order per partition (the deadline came). */
  drainAll(): T[] {
    const drained: T[] = [];
    for (const queue of this.#ready.values()) drained.push(...queue.splice(0));
    for (const queue of this.#waiting.values()) drained.push(...queue);
    this.#waiting.clear();
    this.#pending = 0;
    return drained.sort((a, b) => (a.partitionKey === b.partitionKey ? a.offset - b.offset : a.partitionKey < b.partitionKey ? -1 : 1));
  }

  #pushReady(task: T): void {
    let queue = this.#ready.get(task.partitionKey);
    if (queue === undefined) {
      queue = [];
      this.#ready.set(task.partitionKey, queue);
      this.#turn.push(task.partitionKey);
    }
    // Keep offset order: a lane's follower can have a lower offset than independent records queued earlier.
    let i = queue.length;
    while (i > 0 && queue[i - 1]!.offset > task.offset) i -= 1;
    queue.splice(i, 0, task);
  }
}
