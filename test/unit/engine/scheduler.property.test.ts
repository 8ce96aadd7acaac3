import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LaneScheduler } from '../../../src/engine/scheduler';
import { task, type TestTask } from './factories';

/**
 * Model-based properties of the lane scheduler: random tasks over a few partitions and lanes (the same lane ids on
 * every partition), and random interleavings of next / finish / a failed head (drainLane then finish), checked
 * against a plain model after every step. The model checks with node:assert: thousands of checks per run, and
 * `expect` is slow enough there to make the suite crawl.
 */

type Step = { readonly kind: 'next' | 'finish' | 'fail'; readonly pick: number };

const laneArb = fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined });

/** 1 to 3 partitions of up to 15 tasks each, offsets ascending with random gaps. */
const partitionsArb = fc
  .array(fc.array(fc.record({ lane: laneArb, gap: fc.integer({ min: 1, max: 3 }) }), { maxLength: 15 }), { minLength: 1, maxLength: 3 })
  .map((partitions) =>
    partitions.map((specs, p) => {
      let offset = 100 * p;
      return specs.map(({ lane, gap }) => {
        offset += gap;
        return task(`orders-${p}`, offset, lane);
      });
    }),
  );

const stepsArb = fc.array(
  fc.record({ kind: fc.constantFrom<Step['kind']>('next', 'next', 'finish', 'fail'), pick: fc.nat() }),
  { maxLength: 150 },
);

const laneKey = (t: TestTask): string => `${t.partitionKey}\n${t.lane ?? ''}`;
const byPartitionThenOffset = (a: TestTask, b: TestTask): number =>
  a.partitionKey === b.partitionKey ? a.offset - b.offset : a.partitionKey < b.partitionKey ? -1 : 1;

/** What the scheduler must do, in plain terms, and the checks of every step. */
class Model {
  readonly all: TestTask[];
  readonly started = new Set<TestTask>();
  readonly finished = new Set<TestTask>();
  readonly drained = new Set<TestTask>();
  readonly running: TestTask[] = [];
  readonly startOrder = new Map<string, number[]>();
  /** Per lane (partition + lane id), its tasks in offset order. */
  readonly lanes = new Map<string, TestTask[]>();
  startCount = 0;

  constructor(
    readonly scheduler: LaneScheduler<TestTask>,
    partitions: TestTask[][],
  ) {
    this.all = partitions.flat();
    for (const t of this.all) {
      if (t.lane === undefined) continue;
      const laneTasks = this.lanes.get(laneKey(t)) ?? [];
      laneTasks.push(t);
      this.lanes.set(laneKey(t), laneTasks);
    }
  }

  /** Not started, not drained, and (for a lane) every earlier task of its lane finished. */
  eligible(): TestTask[] {
    const eligible = this.all.filter((t) => t.lane === undefined && !this.started.has(t) && !this.drained.has(t));
    for (const laneTasks of this.lanes.values()) {
      const head = laneTasks.find((t) => !this.finished.has(t));
      if (head !== undefined && !this.started.has(head) && !this.drained.has(head)) eligible.push(head);
    }
    return eligible;
  }

  next(): TestTask | undefined {
    const eligible = this.eligible();
    const atCap = this.running.length >= this.scheduler.concurrency;
    const got = this.scheduler.next();
    if (atCap || eligible.length === 0) {
      assert.equal(got, undefined, 'next() started a task at the cap or with nothing startable');
      return undefined;
    }
    // Work conserving: a free slot and a startable task mean next() returns one.
    assert.ok(got !== undefined, 'next() returned undefined with a free slot and a startable task');
    const started = got;
    assert.ok(eligible.includes(started), `next() started ${started.id}, which may not start yet`);
    // The lowest startable offset of its partition.
    const lowest = Math.min(...eligible.filter((t) => t.partitionKey === started.partitionKey).map((t) => t.offset));
    assert.equal(started.offset, lowest, 'not the lowest startable offset of its partition');
    assert.ok(!this.started.has(started), `${started.id} started twice`);
    this.started.add(started);
    this.startCount += 1;
    this.running.push(started);
    if (started.lane !== undefined) {
      const order = this.startOrder.get(laneKey(started)) ?? [];
      order.push(started.offset);
      this.startOrder.set(laneKey(started), order);
    }
    return started;
  }

  finish(index: number): void {
    const [done] = this.running.splice(index, 1);
    this.finished.add(done!);
    this.scheduler.finish(done!);
  }

  /** A running lane head failed: its lane's tasks not started are drained, then the head finishes. */
  fail(index: number): void {
    const head = this.running[index]!;
    if (head.lane !== undefined) {
      const expected = this.all
        .filter((t) => laneKey(t) === laneKey(head) && !this.started.has(t) && !this.drained.has(t))
        .sort(byPartitionThenOffset);
      const drained = this.scheduler.drainLane(head.partitionKey, head.lane);
      assert.deepEqual(drained, expected);
      for (const t of drained) this.drained.add(t);
    }
    this.finish(index);
  }

  checkInvariants(): void {
    assert.equal(this.scheduler.activeCount, this.running.length, 'activeCount');
    assert.ok(this.scheduler.activeCount <= this.scheduler.concurrency, 'activeCount above concurrency');
    assert.equal(this.scheduler.pendingCount, this.all.length - this.started.size - this.drained.size, 'pendingCount');
    const runningLanes = this.running.filter((t) => t.lane !== undefined).map(laneKey);
    assert.equal(new Set(runningLanes).size, runningLanes.length, 'two running tasks of one lane');
  }

  /** Starts what can start and finishes the oldest running task, until nothing runs. */
  runToEnd(): void {
    for (;;) {
      while (this.next() !== undefined) this.checkInvariants();
      if (this.running.length === 0) return;
      this.finish(0);
      this.checkInvariants();
    }
  }
}

function play(model: Model, steps: readonly Step[]): void {
  for (const step of steps) {
    if (step.kind === 'next' || model.running.length === 0) model.next();
    else if (step.kind === 'finish') model.finish(step.pick % model.running.length);
    else model.fail(step.pick % model.running.length);
    model.checkInvariants();
  }
}

function scheduled(concurrency: number, partitions: TestTask[][]): Model {
  const scheduler = new LaneScheduler<TestTask>(concurrency);
  for (const tasks of partitions) scheduler.add(tasks);
  const model = new Model(scheduler, partitions);
  model.checkInvariants();
  return model;
}

describe('LaneScheduler properties', () => {
  it('never runs two tasks of one lane, starts each lane in offset order and every task exactly once, within the cap', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 }), partitionsArb, stepsArb, (concurrency, partitions, steps) => {
        // Prepare
        const model = scheduled(concurrency, partitions);

        // Act
        play(model, steps);
        model.runToEnd();

        // Assess
        expect(model.startCount).toBe(model.started.size);
        expect(model.started.size + model.drained.size).toBe(model.all.length);
        for (const t of model.drained) expect(model.started.has(t)).toBe(false);
        for (const [key, order] of model.startOrder) {
          const laneOffsets = model.all.filter((t) => t.lane !== undefined && laneKey(t) === key && !model.drained.has(t)).map((t) => t.offset);
          expect(order).toEqual(laneOffsets);
        }
        expect(model.scheduler.pendingCount).toBe(0);
        expect(model.scheduler.next()).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });

  it('without failures, runs every task: nothing is left when nothing runs', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 }), partitionsArb, fc.array(fc.nat(), { maxLength: 200 }), (concurrency, partitions, picks) => {
        // Prepare
        const model = scheduled(concurrency, partitions);

        // Act: alternate between starting everything startable and finishing a random running task.
        for (const pick of picks) {
          while (model.next() !== undefined) model.checkInvariants();
          if (model.running.length === 0) break;
          model.finish(pick % model.running.length);
          model.checkInvariants();
        }
        model.runToEnd();

        // Assess
        expect(model.started.size).toBe(model.all.length);
        expect(model.startCount).toBe(model.all.length);
      }),
      { numRuns: 500 },
    );
  });

  it('drainAll returns exactly the tasks not started, sorted, and nothing starts afterwards', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 }), partitionsArb, stepsArb, (concurrency, partitions, steps) => {
        // Prepare
        const model = scheduled(concurrency, partitions);
        play(model, steps);
        const expected = model.all.filter((t) => !model.started.has(t) && !model.drained.has(t)).sort(byPartitionThenOffset);
        const runningBefore = model.running.length;

        // Act
        const drained = model.scheduler.drainAll();

        // Assess
        expect(drained).toEqual(expected);
        expect(model.scheduler.pendingCount).toBe(0);
        expect(model.scheduler.activeCount).toBe(runningBefore);
        while (model.running.length > 0) {
          model.scheduler.finish(model.running.shift()!);
          expect(model.scheduler.next()).toBeUndefined();
        }
        expect(model.scheduler.activeCount).toBe(0);
      }),
      { numRuns: 500 },
    );
  });
});
