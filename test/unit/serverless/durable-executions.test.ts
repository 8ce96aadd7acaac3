/**
 * The offline trigger's durable execution (`playExecution`) on rounds a test plays: rounds until nothing waits, billed
 * their run time, waits not billed; a stop ends a wait at once and leaves the batch; a round's error fails it.
 */
import type { RoundOutcome } from '../../../src/retry/suspend-loop';
import { executionReport, leftUncommitted, playExecution } from '../../../src/serverless/offline/durable-executions';

const answer = { batchItemFailures: [] };

/** Outcomes relative to the round's own clock: a copy due `dueIn` ms after the round (none: the final round). */
function rounds(...dueIn: Array<number | undefined>): { runRound: (execution: unknown) => Promise<unknown>; given: unknown[] } {
  const given: unknown[] = [];
  return {
    given,
    runRound: async (execution) => {
      const now = Date.now();
      const next = dueIn[given.length];
      given.push(execution);
      const outcome: RoundOutcome = { response: answer, ...(next === undefined ? {} : { waiting: { copies: 2, nextDueAtMs: now + next } }), startedAtMs: now, endedAtMs: now };
      return outcome;
    },
  };
}

describe('a durable execution under the offline trigger', () => {
  it('runs rounds until nothing waits, each round given the execution, and answers with the last', async () => {
    const { runRound, given } = rounds(600, undefined);
    const end = await playExecution({ runRound, stopSignal: new AbortController().signal, timeoutMs: 900_000 });
    expect(end).toMatchObject({ kind: 'answered', response: answer, figures: { rounds: 2 } });
    expect(given).toEqual([expect.objectContaining({ timeoutMs: 900_000, startedAtMs: expect.any(Number) }), expect.objectContaining({ timeoutMs: 900_000 })]);
    expect(end.figures.suspendedMs).toBeGreaterThan(0);
  });

  it('leaves the batch when the trigger stops during a wait, saying how many copies wait', async () => {
    const stop = new AbortController();
    const { runRound } = rounds(3_600_000);
    const ended = playExecution({ runRound, stopSignal: stop.signal, timeoutMs: 900_000 });
    stop.abort();
    const end = await ended;
    expect(end).toMatchObject({ kind: 'left', waiting: { copies: 2 }, figures: { rounds: 1 } });
    expect(executionReport('ordersRetry', 7, end)).toMatch(/^\(λ: ordersRetry\) REPORT DurableExecution: offline-7 {2}Rounds: 1 {2}Billed Duration: \d+ ms {2}Suspended: \d+ ms {2}Status: STOPPED$/);
    expect(leftUncommitted('ordersRetry', ['g.retry.10m-0'], { copies: 2, nextDueAtMs: 0 })).toBe(
      'kafka-lanes offline: ordersRetry: 2 copies waiting in g.retry.10m-0 left uncommitted: they run when the trigger starts again (none is lost or run before it is due)',
    );
  });

  it("fails with a round's error", async () => {
    const end = await playExecution({ runRound: async () => { throw new Error('handler crashed'); }, stopSignal: new AbortController().signal, timeoutMs: 900_000 });
    expect(end).toMatchObject({ kind: 'failed', error: new Error('handler crashed'), figures: { rounds: 1 } });
  });

  it("answers at once with a function's own response when it is not a round's (a handler not built with `lanes()`)", async () => {
    const end = await playExecution({ runRound: async () => ({ statusCode: 200 }), stopSignal: new AbortController().signal, timeoutMs: 900_000 });
    expect(end).toMatchObject({ kind: 'answered', response: { statusCode: 200 }, figures: { rounds: 1, suspendedMs: 0 } });
  });
});
