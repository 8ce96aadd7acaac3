/**
 * The suspend loop's pure parts: the wait after a round, the point past which a round may not leave a copy waiting,
 * a round's compact answer, the local channel that makes an invocation a round, the execution timeout read from the
 * environment, and the loop itself on ports a test plays.
 */
import fc from 'fast-check';
import { WAIT_HERE_MS } from '../../../src/retry/copy-wait';
import { roundClientContext, roundOf } from '../../../src/retry/execution-window';
import { compactResponse, retryExecutionTimeoutMs, suspendHorizon, suspendLoop, waitAfter, type RoundOutcome } from '../../../src/retry/suspend-loop';

const T0 = 1_750_000_000_000;
const failure = (partition: string, offset: number) => ({ itemIdentifier: { partition, offset } });
const round = (endedAtMs: number, nextDueAtMs?: number): RoundOutcome => ({
  response: { batchItemFailures: [] },
  ...(nextDueAtMs === undefined ? {} : { waiting: { copies: 1, nextDueAtMs } }),
  startedAtMs: T0,
  endedAtMs,
});

describe('the wait after a round (`waitAfter`)', () => {
  it('ends the loop when nothing waits', () => {
    expect(waitAfter(round(T0))).toBeUndefined();
  });

  it('waits whole seconds, at least one, ending at most WAIT_HERE_MS before the next due time', () => {
    expect(waitAfter(round(T0, T0 + 4_250))).toBe(4);
    expect(waitAfter(round(T0, T0 + 4_251))).toBe(5);
    expect(waitAfter(round(T0, T0 + 100))).toBe(1);
    expect(waitAfter(round(T0, T0 - 5_000))).toBe(1);
  });

  it('wakes at most WAIT_HERE_MS before a copy is due (the rest is waited in the round) and less than a second minus that after it', () => {
    fc.assert(fc.property(fc.integer({ min: 1_000 - WAIT_HERE_MS, max: 900_000 }), (dueIn) => {
      const wakeIn = waitAfter(round(T0, T0 + dueIn))! * 1000;
      return Number.isInteger(wakeIn / 1000) && dueIn - wakeIn <= WAIT_HERE_MS && wakeIn - dueIn < 1_000 - WAIT_HERE_MS;
    }));
  });
});

describe('how long a round may leave a copy waiting (`suspendHorizon`)', () => {
  const execution = { startedAtMs: T0, timeoutMs: 900_000 };

  it("holds a batch for its tier's delay when that is longer than a round", () => {
    expect(suspendHorizon(execution, 60_000, 600_000)).toBe(T0 + 600_000);
  });

  it("holds a short tier's batch as long as a plain invocation would have: a round's time", () => {
    expect(suspendHorizon(execution, 60_000, 5_000)).toBe(T0 + 60_000);
  });

  it("keeps a round's time before the execution's timeout, and at most half the timeout for it", () => {
    expect(suspendHorizon(execution, 120_000, 3_600_000)).toBe(T0 + 780_000);
    expect(suspendHorizon(execution, 900_000, 600_000)).toBe(T0 + 450_000);
  });
});

describe("a round's answer (`compactResponse`)", () => {
  it('keeps the lowest failure of each partition: all an event source mapping reads of it', () => {
    const response = { batchItemFailures: [failure('a.retry.5s-0', 9), failure('a.retry.5s-1', 3), failure('a.retry.5s-0', 7)] };
    expect(compactResponse(response)).toEqual({ batchItemFailures: [failure('a.retry.5s-0', 7), failure('a.retry.5s-1', 3)] });
    expect(compactResponse({ batchItemFailures: [] })).toEqual({ batchItemFailures: [] });
  });
});

describe('the local channel of a round (`roundClientContext`, `roundOf`)', () => {
  it('reads back the execution it was given, and nothing from another client context', () => {
    expect(roundOf({ clientContext: roundClientContext({ startedAtMs: T0, timeoutMs: 900_000 }) })).toEqual({ startedAtMs: T0, timeoutMs: 900_000 });
    expect(roundOf({ clientContext: roundClientContext({ timeoutMs: 60_000 }) })).toEqual({ timeoutMs: 60_000 });
    expect(roundOf({})).toBeUndefined();
    expect(roundOf({ clientContext: null })).toBeUndefined();
    expect(roundOf({ clientContext: { custom: { app: 'mobile' } } })).toBeUndefined();
    expect(roundOf({ clientContext: { custom: { 'kafka-lanes.round': { timeoutMs: 'soon' } } } })).toBeUndefined();
  });
});

describe("the retry function's execution timeout (`retryExecutionTimeoutMs`)", () => {
  it('reads whole seconds, 900 when unset', () => {
    expect(retryExecutionTimeoutMs({ KAFKA_LANES_RETRY_EXECUTION_TIMEOUT: '600' })).toBe(600_000);
    expect(retryExecutionTimeoutMs({})).toBe(900_000);
    expect(retryExecutionTimeoutMs({ KAFKA_LANES_RETRY_EXECUTION_TIMEOUT: '' })).toBe(900_000);
  });

  it.each(['0', '-5', '1.5', '15m', '31622401'])('refuses `%s`, naming the variable and what it expects', (text) => {
    expect(() => retryExecutionTimeoutMs({ KAFKA_LANES_RETRY_EXECUTION_TIMEOUT: text })).toThrow(
      `Invalid \`KAFKA_LANES_RETRY_EXECUTION_TIMEOUT\`: expected the retry function's durable execution timeout, a whole number of seconds from 1 to 31622400, got \`${text}\``,
    );
  });
});

describe('the loop (`suspendLoop`)', () => {
  it('runs rounds and waits until a round leaves nothing waiting, and answers with that round', async () => {
    const steps: string[] = [];
    const outcomes = [round(T0 + 10, T0 + 3_000), round(T0 + 3_010, T0 + 9_000), { ...round(T0 + 9_010), response: { batchItemFailures: [failure('t-0', 4)] } }];
    const response = await suspendLoop({
      round: async (index, execution) => {
        steps.push(`round ${index} ${execution.startedAtMs === undefined ? 'unstarted' : execution.startedAtMs - T0}`);
        return outcomes[index]!;
      },
      wait: async (index, seconds) => {
        steps.push(`wait ${index} ${seconds}`);
      },
    }, { timeoutMs: 900_000 });
    expect(response).toEqual({ batchItemFailures: [failure('t-0', 4)] });
    expect(steps).toEqual(['round 0 unstarted', 'wait 0 3', 'round 1 0', 'wait 1 6', 'round 2 0']);
  });

  it('fails as the round fails', async () => {
    await expect(suspendLoop({ round: async () => { throw new Error('Redis unreachable'); }, wait: async () => undefined }, { timeoutMs: 1_000 })).rejects.toThrow('Redis unreachable');
  });
});
