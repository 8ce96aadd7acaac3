/** The rules of a retry copy not due yet (`copyWaitAction`): wait here, wait suspended, or back to its tier. */
import fc from 'fast-check';
import { copyWaitAction, WAIT_HERE_MS } from '../../../src/retry/copy-wait';
import { INLINE_WAIT } from '../../../src/engine/run-scope';

const T0 = 1_750_000_000_000;
const suspend = (untilMs: number) => ({ kind: 'suspend', untilMs }) as const;

describe('what a copy not due yet does', () => {
  it.each([
    ['a plain invocation waits here, however far its due time', INLINE_WAIT, T0 + 3_600_000, { action: 'wait-here' }],
    ['a round waits here for a copy due within the rounding of a durable wait', suspend(T0 + 60_000), T0 + WAIT_HERE_MS, { action: 'wait-here' }],
    ['a round suspends a copy due within what the execution may wait, until due', suspend(T0 + 60_000), T0 + WAIT_HERE_MS + 1, { action: 'suspend', wakeAtMs: T0 + WAIT_HERE_MS + 1 }],
    ['...up to that point itself', suspend(T0 + 60_000), T0 + 60_000, { action: 'suspend', wakeAtMs: T0 + 60_000 }],
    ['a round suspends a copy due later until the execution may wait no longer', suspend(T0 + 60_000), T0 + 60_001, { action: 'suspend', wakeAtMs: T0 + 60_000 }],
    ['a round at that point sends it back to its tier', suspend(T0 + WAIT_HERE_MS), T0 + 60_001, { action: 'write-back' }],
    ['...and past it', suspend(T0 - 1), T0 + 60_001, { action: 'write-back' }],
  ] as const)('%s', (_name, copyWait, dueAtMs, expected) => {
    expect(copyWaitAction({ copyWait, dueAtMs, nowMs: T0 })).toEqual(expected);
  });

  it('never wakes a copy after its due time, nor writes one back while the execution may still wait for it', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 3_600_000 }), fc.integer({ min: -60_000, max: 3_600_000 }), (dueIn, untilIn) => {
      const action = copyWaitAction({ copyWait: suspend(T0 + untilIn), dueAtMs: T0 + dueIn, nowMs: T0 });
      if (action.action === 'suspend') return action.wakeAtMs <= T0 + dueIn && action.wakeAtMs > T0 + WAIT_HERE_MS;
      if (action.action === 'write-back') return dueIn > WAIT_HERE_MS && untilIn <= WAIT_HERE_MS;
      return dueIn <= WAIT_HERE_MS;
    }));
  });
});
