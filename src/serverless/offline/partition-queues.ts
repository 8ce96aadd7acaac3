import type { AwsKafkaEvent, AwsKafkaRecord } from '../../event/types';
import { topicPartitionKey } from '../../event/topic-partition';
import { nextEvent, readOutcomes, retryDelayMs, type BatchLimits, type EventSourceSpec } from './batching';

export interface PartitionQueuesSettings extends BatchLimits {
  /** The function the mapping invokes (log lines name it). */
  readonly functionKey: string;
  readonly eventSource: EventSourceSpec;
  readonly bootstrapServers: readonly string[];
  /** One event may hold several partitions' records (AWS's events may); else one partition per event. */
  readonly mixPartitions: boolean;
  readonly reportBatchItemFailures: boolean;
  /** Backoff before a failed partition's records are sent again: doubled per attempt up to the max. */
  readonly retryDelayMs: number;
  readonly retryMaxDelayMs: number;
}

/** A partition's commit: `offset` is the next record to read (last done + 1). */
export interface PartitionOffset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

/** What the queues need of the consumer and of Lambda. */
export interface PartitionQueuesPorts {
  /**
   * Runs the function with one event; resolves with its response or its error, never rejects. `left`: a durable
   * execution the trigger's stop left with copies waiting: nothing of the event is committed, its records are read
   * again from the last commit when the trigger starts again.
   */
  invoke(event: AwsKafkaEvent, partitions: readonly string[]): Promise<{ response?: unknown; error?: unknown; left?: true }>;
  /** Commits the consumer group's offsets of the partitions given. */
  commit(offsets: readonly PartitionOffset[]): Promise<void>;
  /** A partition's queue is empty and idle: its records may be fetched again, from `offset` on. */
  release(topic: string, partition: number, offset: number): void;
  warning(message: string): void;
}

interface Queue {
  readonly topic: string;
  readonly partition: number;
  readonly key: string;
  /** Fetched, not yet done, in offset order; the head is in flight while `busy`. */
  records: AwsKafkaRecord[];
  /** The offset after the last record queued: a record below it fetched again is already queued or done. */
  next: number | undefined;
  /** An invocation holding this partition's records is in flight (at most one per partition). */
  busy: boolean;
  /** After a failure, nothing of this partition is sent before this time (epoch ms). */
  notBefore: number;
  attempt: number;
  /** Changes when the partition is revoked: what an invocation started before learns on return. */
  epoch: number;
}

/**
 * The event source mapping's side of the partitions of one trigger: the consumer hands each fetched batch
 * over (`add`) and goes on fetching the other partitions; each partition's records wait in a queue of its own.
 * Invocations run in parallel across partitions and one at a time per partition, so one slow invocation holds
 * only the partitions in its event. With `mixPartitions` an event takes the heads of several idle partitions'
 * queues (each a prefix, in offset order) up to `batchSize` records and 6 MB; without it, one partition per
 * event. After an invocation each partition of it commits what is done (all of it, or the records below the
 * lowest failed one of a partial batch response) and backs off to send the rest again; a partition whose queue
 * is empty is released to the consumer. Knows nothing of kafkajs: it takes ports.
 *
 * @example
 * const queues = new PartitionQueues(settings, { invoke, commit, release, warning });
 * queues.add('orders', 0, records); // invokes, commits, then release('orders', 0, lastOffset + 1)
 */
export class PartitionQueues {
  readonly #settings: PartitionQueuesSettings;
  readonly #ports: PartitionQueuesPorts;
  readonly #queues = new Map<string, Queue>();
  readonly #idle: Array<() => void> = [];
  #inFlight = 0;
  #stopping = false;
  #pumpScheduled = false;
  #timer: NodeJS.Timeout | undefined;
  /** Which ready queue leads the next event: turns, so no partition always goes first. */
  #turn = 0;

  constructor(settings: PartitionQueuesSettings, ports: PartitionQueuesPorts) {
    this.#settings = settings;
    this.#ports = ports;
  }

  /** Invocations in flight now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * Queues a partition's fetched records (offset order). Records below what is queued already (a fetch again
   * after a rebalance) are skipped; with nothing new and nothing pending, the partition is released at once.
   */
  add(topic: string, partition: number, records: readonly AwsKafkaRecord[]): void {
    const key = topicPartitionKey(topic, partition);
    let queue = this.#queues.get(key);
    if (queue === undefined) {
      queue = { topic, partition, key, records: [], next: undefined, busy: false, notBefore: 0, attempt: 0, epoch: 0 };
      this.#queues.set(key, queue);
    }
    const from = queue.next;
    const fresh = from === undefined ? records : records.filter((record) => record.offset >= from);
    const last = fresh[fresh.length - 1];
    if (last !== undefined) {
      queue.records.push(...fresh);
      queue.next = last.offset + 1;
    } else if (queue.records.length === 0 && !queue.busy && queue.next !== undefined) {
      this.#ports.release(topic, partition, queue.next);
    }
    this.#schedulePump();
  }

  /**
   * The partitions of the member's new assignment (keys `"<topic>-<partition>"`): the queues of the others drop
   * their records (the new owner reads them from the last commit) and an invocation of theirs still in flight
   * commits nothing. Returns the partitions dropped.
   */
  assign(assigned: ReadonlySet<string>): Array<{ topic: string; partition: number }> {
    const dropped: Array<{ topic: string; partition: number }> = [];
    for (const queue of this.#queues.values()) {
      if (assigned.has(queue.key)) continue;
      queue.epoch += 1;
      queue.records = [];
      queue.next = undefined;
      queue.attempt = 0;
      queue.notBefore = 0;
      dropped.push({ topic: queue.topic, partition: queue.partition });
    }
    return dropped;
  }

  /** Starts no more invocations; resolves once those in flight have returned and committed. */
  drain(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#timer);
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  // After the running task: the consumer hands a fetch's batches over one after another in one go, so the
  // event that follows can hold all of them.
  #schedulePump(): void {
    if (this.#pumpScheduled || this.#stopping) return;
    this.#pumpScheduled = true;
    setImmediate(() => {
      this.#pumpScheduled = false;
      this.#pump();
    });
  }

  #pump(): void {
    if (this.#stopping) return;
    const now = Date.now();
    let ready = [...this.#queues.values()].filter((queue) => !queue.busy && queue.records.length > 0 && queue.notBefore <= now);
    if (ready.length > 0) {
      const lead = this.#turn++ % ready.length;
      ready = [...ready.slice(lead), ...ready.slice(0, lead)];
    }
    while (ready.length > 0) {
      const candidates = this.#settings.mixPartitions ? ready : ready.slice(0, 1);
      const next = nextEvent(
        candidates.map((queue) => queue.records),
        this.#settings.eventSource,
        this.#settings.bootstrapServers,
        this.#settings,
      );
      if (next === undefined) break;
      const taken = candidates.flatMap((queue, i) => (next.parts[i]!.length > 0 ? [{ queue, records: next.parts[i]! }] : []));
      ready = ready.filter((queue) => !taken.some((part) => part.queue === queue));
      this.#run(taken, next.event, next.bytes).catch((error: unknown) => {
        this.#ports.warning(`kafka-lanes offline: ${this.#settings.functionKey}: ${error instanceof Error ? error.message : String(error)}`);
      });
    }
    this.#armTimer(now);
  }

  async #run(taken: ReadonlyArray<{ queue: Queue; records: readonly AwsKafkaRecord[] }>, event: AwsKafkaEvent, bytes: number): Promise<void> {
    const { functionKey, maxPayloadBytes } = this.#settings;
    const started = taken.map(({ queue }) => queue.epoch);
    for (const { queue } of taken) queue.busy = true;
    this.#inFlight += 1;
    try {
      if (bytes > maxPayloadBytes) {
        const first = taken[0]!;
        this.#ports.warning(`kafka-lanes offline: ${first.queue.key} offset ${first.records[0]?.offset} exceeds 6 MB; Lambda could not deliver it`);
      }
      const { response, error, left } = await this.#ports.invoke(
        event,
        taken.map(({ queue }) => queue.key),
      );
      if (left === true) return;
      const outcomes = readOutcomes(response, error, taken.map(({ records }) => records), this.#settings.reportBatchItemFailures);
      const commits: PartitionOffset[] = [];
      taken.forEach(({ queue, records }, i) => {
        const outcome = outcomes[i]!;
        if (queue.epoch !== started[i]) return;
        const done = outcome.kind === 'success' ? records : records.filter((record) => record.offset < outcome.offset);
        const last = done[done.length - 1];
        if (last !== undefined) {
          commits.push({ topic: queue.topic, partition: queue.partition, offset: last.offset + 1 });
          queue.records = queue.records.slice(done.length);
        }
        if (outcome.kind === 'success') {
          queue.attempt = 0;
          return;
        }
        queue.attempt += 1;
        const delay = retryDelayMs(queue.attempt, this.#settings.retryDelayMs, this.#settings.retryMaxDelayMs);
        queue.notBefore = Date.now() + delay;
        this.#ports.warning(`kafka-lanes offline: ${functionKey} ${queue.key} from offset ${outcome.offset}: ${outcome.reason}; sending the batch again in ${delay} ms`);
      });
      if (commits.length > 0) {
        // A commit refused (a rebalance under way) costs no record: the next commit of the partition covers these,
        // or its next owner reads them again from the last commit.
        await this.#ports.commit(commits).catch((commitError: unknown) => {
          this.#ports.warning(
            `kafka-lanes offline: ${functionKey}: commit of ${commits.map((c) => `${c.topic}-${c.partition}@${c.offset}`).join(', ')} failed: ${commitError instanceof Error ? commitError.message : String(commitError)}`,
          );
        });
      }
    } finally {
      taken.forEach(({ queue }, i) => {
        queue.busy = false;
        if (queue.epoch === started[i] && queue.records.length === 0 && queue.next !== undefined) this.#ports.release(queue.topic, queue.partition, queue.next);
      });
      this.#inFlight -= 1;
      if (this.#inFlight === 0) for (const resolve of this.#idle.splice(0)) resolve();
      this.#schedulePump();
    }
  }

  /** Wakes the pump when the earliest backoff of an idle partition ends. */
  #armTimer(now: number): void {
    clearTimeout(this.#timer);
    let earliest: number | undefined;
    for (const queue of this.#queues.values()) {
      if (!queue.busy && queue.records.length > 0 && queue.notBefore > now) earliest = Math.min(earliest ?? queue.notBefore, queue.notBefore);
    }
    if (earliest !== undefined) this.#timer = setTimeout(() => this.#pump(), earliest - now);
  }
}
