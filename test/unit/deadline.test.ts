import { getEventListeners } from 'node:events';
import { withinDeadline } from '../../src/deadline';

const never = new Promise<never>(() => undefined);
const why = (timedOut: boolean) => new Error(timedOut ? 'timed out' : 'stopped');

describe('withinDeadline: many short calls bounded without a signal or timer each', () => {
  it('passes answers and errors through, and gives up only the calls whose time passed', async () => {
    const calls = [
      withinDeadline(Promise.resolve('a'), 30, undefined, why),
      withinDeadline(Promise.reject(new Error('READONLY')), 30, undefined, why),
      withinDeadline(never, 30, undefined, why),
      withinDeadline(new Promise((resolve) => setTimeout(() => resolve('late but in time'), 5)), 30, undefined, why),
      withinDeadline(never, 60, undefined, why),
    ];

    const outcomes = await Promise.allSettled(calls);

    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).toEqual([
      'a', 'READONLY', 'timed out', 'late but in time', 'timed out',
    ]);
  });

  it('gives up every call a signal bounds when it aborts, through one listener, and none that settled', async () => {
    const controller = new AbortController();
    const running = Array.from({ length: 50 }, () => withinDeadline(never, 60_000, controller.signal, why));
    const answered = withinDeadline(Promise.resolve(1), 60_000, controller.signal, why);
    const listeners = getEventListeners(controller.signal, 'abort').length;

    await expect(answered).resolves.toBe(1);
    controller.abort();

    expect(listeners).toBe(1);
    const outcomes = await Promise.allSettled(running);
    expect(outcomes.every((o) => o.status === 'rejected' && (o.reason as Error).message === 'stopped')).toBe(true);
  });

  it('gives up at once under a signal already aborted, and is the work itself without limits', async () => {
    const work = Promise.resolve(2);

    await expect(withinDeadline(never, 1_000, AbortSignal.abort(), why)).rejects.toThrow('stopped');
    expect(withinDeadline(work, undefined, undefined, why)).toBe(work);
    expect(withinDeadline(never, 2 ** 31, undefined, why)).toBe(never);
  });
});
