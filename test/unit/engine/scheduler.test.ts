import { LaneScheduler } from '../../../src/engine/scheduler';
import { partitionTasks, task, type TestTask } from './factories';

/** Starts tasks until `next()` says none: their ids, in start order. */
function startAll(scheduler: LaneScheduler<TestTask>): TestTask[] {
  const started: TestTask[] = [];
  for (let t = scheduler.next(); t !== undefined; t = scheduler.next()) started.push(t);
  return started;
}

const ids = (tasks: readonly TestTask[]): string[] => tasks.map((t) => t.id);

function schedulerWith(concurrency: number, ...partitions: (readonly TestTask[])[]): LaneScheduler<TestTask> {
  const scheduler = new LaneScheduler<TestTask>(concurrency);
  for (const tasks of partitions) scheduler.add(tasks);
  return scheduler;
}

describe('LaneScheduler', () => {
  describe('a new scheduler', () => {
    it('has nothing running, nothing pending, and nothing to start', () => {
      // Prepare
      const scheduler = new LaneScheduler<TestTask>(4);

      // Act
      const next = scheduler.next();

      // Assess
      expect(next).toBeUndefined();
      expect(scheduler.concurrency).toBe(4);
      expect(scheduler.activeCount).toBe(0);
      expect(scheduler.pendingCount).toBe(0);
    });

    it('accepts an empty add()', () => {
      // Prepare
      const scheduler = new LaneScheduler<TestTask>(4);

      // Act
      scheduler.add([]);

      // Assess
      expect(scheduler.pendingCount).toBe(0);
      expect(scheduler.next()).toBeUndefined();
    });
  });

  describe('concurrency cap', () => {
    it.each([1, 2, 5, 9])('starts at most %p independent tasks out of 10, then next() returns undefined', (concurrency) => {
      // Prepare
      const scheduler = schedulerWith(concurrency, partitionTasks('orders-0', Array<undefined>(10).fill(undefined)));

      // Act
      const started = startAll(scheduler);

      // Assess
      expect(started).toHaveLength(concurrency);
      expect(scheduler.activeCount).toBe(concurrency);
      expect(scheduler.pendingCount).toBe(10 - concurrency);
      expect(scheduler.next()).toBeUndefined();
    });

    it('counts the running tasks of every partition together', () => {
      // Prepare
      const scheduler = schedulerWith(
        3,
        partitionTasks('orders-0', [undefined, undefined, undefined]),
        partitionTasks('orders-1', [undefined, undefined, undefined]),
      );

      // Act
      const started = startAll(scheduler);

      // Assess
      expect(ids(started)).toEqual(['orders-0@0', 'orders-1@0', 'orders-0@1']);
      expect(scheduler.activeCount).toBe(3);
    });

    it('frees one slot per finish, and only one', () => {
      // Prepare
      const scheduler = schedulerWith(2, partitionTasks('orders-0', [undefined, undefined, undefined, undefined]));
      const [first] = startAll(scheduler);

      // Act
      scheduler.finish(first!);
      const afterFinish = startAll(scheduler);

      // Assess
      expect(ids(afterFinish)).toEqual(['orders-0@2']);
      expect(scheduler.activeCount).toBe(2);
      expect(scheduler.pendingCount).toBe(1);
    });

    it('does not use up a task when it refuses at the cap', () => {
      // Prepare
      const scheduler = schedulerWith(1, partitionTasks('orders-0', [undefined, undefined]));
      const first = scheduler.next()!;

      // Act
      const refused = scheduler.next();
      scheduler.finish(first);
      const second = scheduler.next();

      // Assess
      expect(refused).toBeUndefined();
      expect(second?.id).toBe('orders-0@1');
    });
  });

  describe('one task per lane at a time', () => {
    it("does not return a lane's follower until its head is finished, however many slots are free", () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', ['a', 'a', 'a']));

      // Act
      const first = startAll(scheduler);

      // Assess
      expect(ids(first)).toEqual(['orders-0@0']);
      expect(scheduler.activeCount).toBe(1);
      expect(scheduler.pendingCount).toBe(2);
    });

    it('releases the followers one finish at a time, in offset order', () => {
      // Prepare
      const scheduler = schedulerWith(10, [task('orders-0', 10, 'a'), task('orders-0', 15, 'a'), task('orders-0', 17, 'a')]);
      const starts: string[] = [];

      // Act
      for (let running = scheduler.next(); running !== undefined; running = scheduler.next()) {
        starts.push(running.id);
        expect(scheduler.next()).toBeUndefined();
        scheduler.finish(running);
      }

      // Assess
      expect(starts).toEqual(['orders-0@10', 'orders-0@15', 'orders-0@17']);
      expect(scheduler.pendingCount).toBe(0);
      expect(scheduler.activeCount).toBe(0);
    });

    it('runs the heads of different lanes of one partition side by side', () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', ['a', 'b', 'a', 'c', 'b']));

      // Act
      const started = startAll(scheduler);

      // Assess
      expect(ids(started)).toEqual(['orders-0@0', 'orders-0@1', 'orders-0@3']);
    });

    it("finishing one lane's head releases only that lane's follower", () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', ['a', 'b', 'a', 'b']));
      const [headA] = startAll(scheduler);

      // Act
      scheduler.finish(headA!);
      const released = startAll(scheduler);

      // Assess
      expect(ids(released)).toEqual(['orders-0@2']);
    });

    it('queues a released follower by offset among ready tasks added before it', () => {
      // Prepare: cap 1, so the independent records 2 and 3 are ready (queued) when the follower 1 becomes ready.
      const scheduler = schedulerWith(1, partitionTasks('orders-0', ['a', 'a', undefined, undefined]));
      const head = scheduler.next()!;

      // Act
      scheduler.finish(head);
      const next = scheduler.next();

      // Assess
      expect(next?.id).toBe('orders-0@1');
    });

    it('keeps a lane blocked while its head is running even when the follower is the only pending task', () => {
      // Prepare
      const scheduler = schedulerWith(5, partitionTasks('orders-0', [undefined, 'a', 'a']));
      startAll(scheduler);

      // Act
      const next = scheduler.next();

      // Assess
      expect(next).toBeUndefined();
      expect(scheduler.activeCount).toBe(2);
      expect(scheduler.pendingCount).toBe(1);
    });
  });

  describe('independent tasks (no lane)', () => {
    it('are all ready at once, in offset order', () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', [undefined, undefined, undefined, undefined, undefined]));

      // Act
      const started = startAll(scheduler);

      // Assess
      expect(ids(started)).toEqual(['orders-0@0', 'orders-0@1', 'orders-0@2', 'orders-0@3', 'orders-0@4']);
    });

    it('are not held behind a running lane head of lower offset', () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', ['a', 'a', undefined, 'b', undefined, 'a']));

      // Act
      const started = startAll(scheduler);

      // Assess
      expect(ids(started)).toEqual(['orders-0@0', 'orders-0@2', 'orders-0@3', 'orders-0@4']);
    });

    it('release nothing when they finish', () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', [undefined, 'a', 'a']));
      const [independent] = startAll(scheduler);

      // Act
      scheduler.finish(independent!);
      const next = scheduler.next();

      // Assess
      expect(next).toBeUndefined();
      expect(scheduler.activeCount).toBe(1);
      expect(scheduler.pendingCount).toBe(1);
    });
  });

  describe('lanes are per partition', () => {
    it('runs the same lane id of two partitions side by side', () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', ['a', 'a']), partitionTasks('orders-1', ['a', 'a']));

      // Act
      const started = startAll(scheduler);

      // Assess
      expect(ids(started)).toEqual(['orders-0@0', 'orders-1@0']);
    });

    it("finishing one partition's head releases only that partition's follower", () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', ['a', 'a']), partitionTasks('orders-1', ['a', 'a']));
      const [head0] = startAll(scheduler);

      // Act
      scheduler.finish(head0!);
      const released = startAll(scheduler);

      // Assess
      expect(ids(released)).toEqual(['orders-0@1']);
    });

    it('tells apart the same partition number of two topics', () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', ['a', 'a']), partitionTasks('payments-0', ['a', 'a']));

      // Act
      const started = startAll(scheduler);

      // Assess
      expect(ids(started)).toEqual(['orders-0@0', 'payments-0@0']);
    });
  });

  describe('round-robin over partitions', () => {
    it('alternates between partitions instead of emptying the first one', () => {
      // Prepare
      const scheduler = schedulerWith(
        10,
        partitionTasks('orders-0', [undefined, undefined, undefined]),
        partitionTasks('orders-1', [undefined, undefined, undefined]),
      );

      // Act
      const started = startAll(scheduler);

      // Assess
      expect(ids(started)).toEqual(['orders-0@0', 'orders-1@0', 'orders-0@1', 'orders-1@1', 'orders-0@2', 'orders-1@2']);
    });

    it('skips a partition that has run dry and goes on with the others', () => {
      // Prepare
      const scheduler = schedulerWith(
        10,
        partitionTasks('orders-0', [undefined]),
        partitionTasks('orders-1', [undefined, undefined, undefined]),
        partitionTasks('orders-2', [undefined, undefined]),
      );

      // Act
      const started = startAll(scheduler);

      // Assess
      expect(ids(started)).toEqual(['orders-0@0', 'orders-1@0', 'orders-2@0', 'orders-1@1', 'orders-2@1', 'orders-1@2']);
    });

    it('does not let a hot partition starve another at concurrency 1', () => {
      // Prepare
      const scheduler = schedulerWith(
        1,
        partitionTasks('orders-0', Array<undefined>(100).fill(undefined)),
        partitionTasks('orders-1', [undefined, undefined]),
      );
      const starts: string[] = [];

      // Act
      for (let i = 0; i < 4; i += 1) {
        const running = scheduler.next()!;
        starts.push(running.id);
        scheduler.finish(running);
      }

      // Assess
      expect(starts).toEqual(['orders-0@0', 'orders-1@0', 'orders-0@1', 'orders-1@1']);
    });

    it('goes on with another partition while one waits for its lane heads to finish', () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', ['a', 'a', 'a']), partitionTasks('orders-1', [undefined, undefined]));

      // Act
      const started = startAll(scheduler);

      // Assess
      expect(ids(started)).toEqual(['orders-0@0', 'orders-1@0', 'orders-1@1']);
    });

    it('serves the lowest ready offset of a partition first', () => {
      // Prepare
      const scheduler = schedulerWith(1, [task('orders-0', 5, 'a'), task('orders-0', 7, undefined), task('orders-0', 9, 'b')]);
      const starts: string[] = [];

      // Act
      for (let running = scheduler.next(); running !== undefined; running = scheduler.next()) {
        starts.push(running.id);
        scheduler.finish(running);
      }

      // Assess
      expect(starts).toEqual(['orders-0@5', 'orders-0@7', 'orders-0@9']);
    });
  });

  describe('drainLane', () => {
    it("returns the lane's waiting tasks in offset order, and they never come out of next()", () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', ['a', 'b', 'a', 'b', 'a']));
      const [headA, headB] = startAll(scheduler);

      // Act
      const drained = scheduler.drainLane('orders-0', 'a');
      scheduler.finish(headA!);
      const afterHeadA = startAll(scheduler);
      scheduler.finish(headB!);
      const afterHeadB = startAll(scheduler);

      // Assess
      expect(ids(drained)).toEqual(['orders-0@2', 'orders-0@4']);
      expect(afterHeadA).toEqual([]);
      expect(ids(afterHeadB)).toEqual(['orders-0@3']);
    });

    it('lowers pendingCount by the number of tasks drained', () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', ['a', 'a', 'a', undefined]));
      startAll(scheduler);
      const pendingBefore = scheduler.pendingCount;

      // Act
      const drained = scheduler.drainLane('orders-0', 'a');

      // Assess
      expect(pendingBefore).toBe(2);
      expect(drained).toHaveLength(2);
      expect(scheduler.pendingCount).toBe(0);
      expect(scheduler.activeCount).toBe(2);
    });

    it('leaves the same lane id of another partition alone', () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', ['a', 'a']), partitionTasks('orders-1', ['a', 'a']));
      const [head0, head1] = startAll(scheduler);

      // Act
      const drained = scheduler.drainLane('orders-0', 'a');
      scheduler.finish(head0!);
      scheduler.finish(head1!);
      const released = startAll(scheduler);

      // Assess
      expect(ids(drained)).toEqual(['orders-0@1']);
      expect(ids(released)).toEqual(['orders-1@1']);
    });

    it.each([
      ['a lane with no followers', 'orders-0', 'b'],
      ['a lane never seen', 'orders-0', 'zzz'],
      ['a partition never seen', 'orders-9', 'a'],
    ])('returns nothing and changes nothing for %s', (_case, partitionKey, lane) => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', ['a', 'b', 'a']));
      startAll(scheduler);

      // Act
      const drained = scheduler.drainLane(partitionKey, lane);

      // Assess
      expect(drained).toEqual([]);
      expect(scheduler.pendingCount).toBe(1);
      expect(scheduler.activeCount).toBe(2);
    });

    it('a second drain of the same lane returns nothing', () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', ['a', 'a', 'a']));
      startAll(scheduler);
      scheduler.drainLane('orders-0', 'a');

      // Act
      const again = scheduler.drainLane('orders-0', 'a');

      // Assess
      expect(again).toEqual([]);
      expect(scheduler.pendingCount).toBe(0);
    });
  });

  describe('drainAll', () => {
    it('returns every task not started, ready and waiting, sorted by partition then offset', () => {
      // Prepare: cap 2, so ready tasks are left over beside the waiting followers.
      const scheduler = schedulerWith(
        2,
        partitionTasks('orders-1', ['a', 'a', undefined, 'b', 'a']),
        partitionTasks('orders-0', [undefined, 'c', 'c', undefined]),
      );
      const started = startAll(scheduler);

      // Act
      const drained = scheduler.drainAll();

      // Assess
      expect(ids(started)).toEqual(['orders-1@0', 'orders-0@0']);
      expect(ids(drained)).toEqual([
        'orders-0@1', 'orders-0@2', 'orders-0@3',
        'orders-1@1', 'orders-1@2', 'orders-1@3', 'orders-1@4',
      ]);
      expect(scheduler.pendingCount).toBe(0);
      expect(scheduler.activeCount).toBe(2);
    });

    it('leaves nothing to start, even after the running heads finish', () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', ['a', 'a', 'b', 'b', undefined]));
      const running = startAll(scheduler);
      scheduler.drainAll();

      // Act
      for (const t of running) scheduler.finish(t);
      const next = scheduler.next();

      // Assess
      expect(next).toBeUndefined();
      expect(scheduler.activeCount).toBe(0);
      expect(scheduler.pendingCount).toBe(0);
    });

    it('returns nothing when everything has started', () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', [undefined, 'a']));
      startAll(scheduler);

      // Act
      const drained = scheduler.drainAll();

      // Assess
      expect(drained).toEqual([]);
      expect(scheduler.activeCount).toBe(2);
    });

    it('does not return tasks already taken by drainLane', () => {
      // Prepare
      const scheduler = schedulerWith(10, partitionTasks('orders-0', ['a', 'a', 'b', 'b']));
      startAll(scheduler);
      scheduler.drainLane('orders-0', 'a');

      // Act
      const drained = scheduler.drainAll();

      // Assess
      expect(ids(drained)).toEqual(['orders-0@3']);
    });
  });

  describe('pendingCount and activeCount', () => {
    it('follow add, next and finish', () => {
      // Prepare
      const scheduler = new LaneScheduler<TestTask>(2);
      const counts: [number, number][] = [];
      const snapshot = (): void => {
        counts.push([scheduler.pendingCount, scheduler.activeCount]);
      };

      // Act
      scheduler.add(partitionTasks('orders-0', ['a', 'a', undefined]));
      snapshot();
      scheduler.add(partitionTasks('orders-1', [undefined]));
      snapshot();
      const first = scheduler.next()!;
      snapshot();
      const second = scheduler.next()!;
      snapshot();
      scheduler.finish(first);
      snapshot();
      scheduler.finish(second);
      snapshot();

      // Assess
      expect(counts).toEqual([
        [3, 0],
        [4, 0],
        [3, 1],
        [2, 2],
        [2, 1],
        [2, 0],
      ]);
    });
  });

  describe('a task that leaves its slot to wait (a retry copy not due yet)', () => {
    it('gives its slot to the next ready task and keeps its lane held', () => {
      // Prepare
      const scheduler = schedulerWith(1, partitionTasks('orders-0', ['a', 'a', 'b']));
      const waiting = scheduler.next()!;

      // Act
      scheduler.leave(waiting);
      const started = startAll(scheduler);

      // Assess: b starts in the freed slot; a's follower waits for a
      expect(ids(started)).toEqual(['orders-0@2']);
      expect(scheduler.activeCount).toBe(1);
      expect(scheduler.pendingCount).toBe(1);
    });

    it('takes a slot again before any task not started, once one is freed', async () => {
      // Prepare
      const scheduler = schedulerWith(1, partitionTasks('orders-0', ['a', 'b', 'c']));
      const waiting = scheduler.next()!;
      scheduler.leave(waiting);
      const running = scheduler.next()!;
      let rejoined = false;

      // Act
      const rejoin = scheduler.rejoin(waiting).then(() => {
        rejoined = true;
      });
      await Promise.resolve();
      const whileFull = rejoined;
      scheduler.finish(running);
      await rejoin;

      // Assess: c does not start while the rejoined task holds the one slot
      expect(whileFull).toBe(false);
      expect(scheduler.activeCount).toBe(1);
      expect(scheduler.next()).toBeUndefined();
      scheduler.finish(waiting);
      expect(ids(startAll(scheduler))).toEqual(['orders-0@2']);
    });

    it('takes a free slot at once', async () => {
      // Prepare
      const scheduler = schedulerWith(2, partitionTasks('orders-0', ['a']));
      const waiting = scheduler.next()!;
      scheduler.leave(waiting);

      // Act
      await scheduler.rejoin(waiting);

      // Assess
      expect(scheduler.activeCount).toBe(1);
    });

    it('finishes without a slot: its lane goes on and no slot is freed twice', () => {
      // Prepare
      const scheduler = schedulerWith(1, partitionTasks('orders-0', ['a', 'a', 'b']));
      const waiting = scheduler.next()!;
      scheduler.leave(waiting);
      const other = scheduler.next()!;

      // Act
      scheduler.finish(waiting);
      const whileOtherRuns = scheduler.next();
      scheduler.finish(other);
      const after = startAll(scheduler);

      // Assess
      expect(other.id).toBe('orders-0@2');
      expect(whileOtherRuns).toBeUndefined();
      expect(ids(after)).toEqual(['orders-0@1']);
      expect(scheduler.activeCount).toBe(1);
    });
  });
});
