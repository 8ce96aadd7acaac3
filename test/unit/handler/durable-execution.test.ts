/**
 * The suspend loop on the durable execution SDK, under the SDK's own local test runner (its checkpoint store and
 * replay, time skipped): a round is a step that runs once whatever the replays, a wait lasts what `waitAfter` decides,
 * the final round's answer is the execution's result, and a round that throws fails the execution.
 */
import { LocalDurableTestRunner } from '@aws/durable-execution-sdk-js-testing';
import type { Context } from 'aws-lambda';
import { durableRetryHandler } from '../../../src/handler/durable-execution';
import { waitAfter, type ExecutionWindow, type RoundOutcome } from '../../../src/retry/suspend-loop';

const T0 = 1_750_000_000_000;
const EVENT = { eventSource: 'SelfManagedKafka', bootstrapServers: '127.0.0.1:9092', records: { 'grp.retry.10s-0': [] } };
const ANSWER = { batchItemFailures: [{ itemIdentifier: { partition: 'grp.retry.10s-0', offset: 4 } }] };

/** A round function that plays the outcomes given, one per round, and notes what each round was given. */
function scripted(outcomes: ReadonlyArray<RoundOutcome | Error>): { rounds: Array<{ event: unknown; execution: ExecutionWindow }>; run: Parameters<typeof durableRetryHandler>[0] } {
  const rounds: Array<{ event: unknown; execution: ExecutionWindow }> = [];
  return {
    rounds,
    run: async (event: unknown, _context: Context, execution: ExecutionWindow) => {
      const outcome = outcomes[rounds.length];
      rounds.push({ event, execution });
      if (outcome === undefined) throw new Error('more rounds than scripted');
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
  };
}

const waiting = (endedAtMs: number, nextDueAtMs: number): RoundOutcome => ({ response: { batchItemFailures: [] }, waiting: { copies: 1, nextDueAtMs }, startedAtMs: T0, endedAtMs });

describe('the suspend loop as a durable execution (the SDK’s local runner)', () => {
  beforeAll(() => LocalDurableTestRunner.setupTestEnvironment({ skipTime: true }));
  afterAll(() => LocalDurableTestRunner.teardownTestEnvironment());

  it('runs each round once whatever the replays, waits as `waitAfter` decides, and answers with the final round', async () => {
    // Prepare: two rounds leave a copy waiting, the third answers.
    const outcomes = [waiting(T0 + 100, T0 + 4_400), waiting(T0 + 4_450, T0 + 12_000), { response: ANSWER, startedAtMs: T0, endedAtMs: T0 + 12_100 }];
    const { rounds, run } = scripted(outcomes);
    const runner = new LocalDurableTestRunner({ handlerFunction: durableRetryHandler(run, 900_000) as never });

    // Act
    const execution = await runner.run({ payload: EVENT });

    // Assess: a later invocation replayed the rounds before it from their checkpoints (each ran once), every round
    // got the event, the later ones the execution's start as the first round read it.
    expect(execution.getStatus()).toBe('SUCCEEDED');
    expect(execution.getResult()).toEqual(ANSWER);
    expect(execution.getInvocations().length).toBeGreaterThan(1);
    expect(rounds.map((round) => round.event)).toEqual([EVENT, EVENT, EVENT]);
    expect(rounds.map((round) => round.execution)).toEqual([{ timeoutMs: 900_000 }, { startedAtMs: T0, timeoutMs: 900_000 }, { startedAtMs: T0, timeoutMs: 900_000 }]);
    expect(execution.getOperations().map((operation) => `${operation.getType()} ${operation.getName()}`)).toEqual([
      'STEP round-0', 'WAIT wait-0', 'STEP round-1', 'WAIT wait-1', 'STEP round-2',
    ]);
    expect(runner.getOperation('wait-0').getWaitDetails()?.waitSeconds).toBe(waitAfter(outcomes[0]!));
    expect(runner.getOperation('wait-1').getWaitDetails()?.waitSeconds).toBe(waitAfter(outcomes[1]!));
    expect([waitAfter(outcomes[0]!), waitAfter(outcomes[1]!)]).toEqual([5, 8]);
  });

  it('fails the execution when a round throws, without running it again as a step retry', async () => {
    const { rounds, run } = scripted([waiting(T0, T0 + 2_000), new Error('Redis unreachable')]);
    const runner = new LocalDurableTestRunner({ handlerFunction: durableRetryHandler(run, 900_000) as never });

    const execution = await runner.run({ payload: EVENT });

    expect(execution.getStatus()).toBe('FAILED');
    expect(execution.getError()?.errorMessage).toContain('Redis unreachable');
    expect(rounds).toHaveLength(2);
  });
});
