/**
 * The suspend loop of a retry batch (docs/ARCHITECTURE.md, "The suspend loop"): one durable execution runs rounds of
 * the same event, each an ordinary retry invocation in which copies not due yet wait suspended (`CopyWait`
 * `suspend`), and between rounds the execution waits, billing nothing, until the next copy is due. AWS plays it
 * with Lambda durable functions (a round is a durable step, a wait a durable wait: `handler/durable-execution.ts`),
 * the offline trigger with serverless-offline's runtime and a timer (`serverless/offline/durable-executions.ts`):
 * both run `suspendLoop`, and `waitAfter` decides every wait.
 */
import type { KafkaBatchItemFailure, KafkaBatchResponse } from '../event';
import type { Waiting } from '../engine/run-scope';
import { ConfigError, describeValue } from '../errors';
import { ENV } from '../options/constants';
import { WAIT_HERE_MS } from './copy-wait';
import type { ExecutionWindow } from './execution-window';

export type { ExecutionWindow } from './execution-window';

/** What one round tells the loop: small and JSON, so a durable step checkpoints it. */
export interface RoundOutcome {
  /** The round's answer to the event source; the final round's is the execution's. */
  readonly response: KafkaBatchResponse;
  /** Copies left for a later round; absent: nothing waits, and the execution ends with this round. */
  readonly waiting?: Waiting | undefined;
  /** The execution's start, as its first round read it (epoch ms). */
  readonly startedAtMs: number;
  /** The clock when the round ended, read inside the round: a replay decides the same wait (epoch ms). */
  readonly endedAtMs: number;
}

/** What the loop is given: how to run a round and how to wait between rounds (each numbered from 0). */
export interface SuspendPorts {
  round(index: number, execution: ExecutionWindow): Promise<RoundOutcome>;
  /** Waits `seconds` without running (a durable wait suspends the execution). */
  wait(index: number, seconds: number): Promise<void>;
}

/**
 * Runs rounds of one event until nothing waits, waiting suspended between them; the final round's answer is the
 * execution's. Every decision comes from a round's outcome (`waitAfter`), never from a clock read here, so a replay of
 * the execution takes the same path.
 *
 * @example
 * const response = await suspendLoop({ round: (i, execution) => runRound(event, execution), wait: (i, s) => sleep(s * 1000) }, { timeoutMs: 900_000 });
 */
export async function suspendLoop(ports: SuspendPorts, execution: ExecutionWindow): Promise<KafkaBatchResponse> {
  let window = execution;
  for (let index = 0; ; index += 1) {
    const outcome = await ports.round(index, window);
    window = { ...window, startedAtMs: outcome.startedAtMs };
    const seconds = waitAfter(outcome);
    if (seconds === undefined) return outcome.response;
    await ports.wait(index, seconds);
  }
}

/**
 * How long the execution waits after a round, in whole seconds (a durable wait's unit, at least one), or `undefined`
 * when nothing waits: the fewest whole seconds that end at most `WAIT_HERE_MS` before the next copy's due time. Woken
 * before it, the copy waits the rest in the round (at most `WAIT_HERE_MS` billed); woken after it, it runs less than a
 * second minus `WAIT_HERE_MS` late. Never early either way: a round runs no copy before its due time. Pure.
 *
 * @example
 * waitAfter({ response, waiting: { copies: 1, nextDueAtMs: t + 4_800 }, startedAtMs: t, endedAtMs: t }); // 5: 200 ms late
 * waitAfter({ response, waiting: { copies: 1, nextDueAtMs: t + 4_200 }, startedAtMs: t, endedAtMs: t }); // 4: 200 ms waited in the round
 */
export function waitAfter(outcome: RoundOutcome): number | undefined {
  if (outcome.waiting === undefined) return undefined;
  return Math.max(1, Math.ceil((outcome.waiting.nextDueAtMs - outcome.endedAtMs - WAIT_HERE_MS) / 1000));
}

/**
 * The latest a round of the execution may leave a copy waiting for (epoch ms): copies due later wait until then and go
 * back to their tier unchanged. The execution must end before its timeout (an event source mapping waits at most 15
 * minutes for it), so the last round keeps a whole round's time (`roundMs`, what the invocation was given; at most half
 * the timeout); and it suspends a batch no longer than the longer of its tier's delay and a round's time, the longest
 * a plain invocation would have held it: copies written to the tier while it waits are due no earlier than that, so a
 * copy due much later (a `RetryLaterError`'s delay, a twin, a copy kept for a recovery) holds none of them up. Pure.
 *
 * @example
 * suspendHorizon({ startedAtMs: t, timeoutMs: 900_000 }, 120_000, 600_000); // t + 600_000
 */
export function suspendHorizon(execution: Required<ExecutionWindow>, roundMs: number, tierDelayMs: number): number {
  const last = execution.timeoutMs - Math.min(roundMs, execution.timeoutMs / 2);
  return execution.startedAtMs + Math.min(last, Math.max(tierDelayMs, roundMs));
}

/**
 * A round's answer, small enough to checkpoint whatever the batch: one failure per partition, its lowest, which is all
 * an event source mapping reads of a partial batch response (it commits below it and redelivers from it). Pure.
 *
 * @example
 * compactResponse({ batchItemFailures: [f('o-0', 7), f('o-0', 9)] }); // { batchItemFailures: [f('o-0', 7)] }
 */
export function compactResponse(response: KafkaBatchResponse): KafkaBatchResponse {
  const lowest = new Map<string, KafkaBatchItemFailure>();
  for (const failure of response.batchItemFailures) {
    const known = lowest.get(failure.itemIdentifier.partition);
    if (known === undefined || failure.itemIdentifier.offset < known.itemIdentifier.offset) lowest.set(failure.itemIdentifier.partition, failure);
  }
  return { batchItemFailures: [...lowest.values()] };
}

/** The longest `DurableConfig.ExecutionTimeout` Lambda takes, in seconds (366 days). */
const MAX_EXECUTION_TIMEOUT_S = 31_622_400;

/**
 * The retry function's durable execution timeout (`KAFKA_LANES_RETRY_EXECUTION_TIMEOUT`, whole seconds, set by the
 * serverless plugin from the function's `DurableConfig.ExecutionTimeout`), in ms; 900 s (the 15 minutes an event
 * source mapping waits for an execution) when unset.
 *
 * @throws ConfigError naming the variable, what it expects and what it was given.
 * @example
 * retryExecutionTimeoutMs({ KAFKA_LANES_RETRY_EXECUTION_TIMEOUT: '600' }); // 600_000
 */
export function retryExecutionTimeoutMs(env: Readonly<Record<string, string | undefined>>): number {
  const text = env[ENV.retryExecutionTimeout];
  if (text === undefined || text === '') return 900_000;
  const seconds = /^[1-9][0-9]*$/.test(text) ? Number(text) : Number.NaN;
  if (!(seconds <= MAX_EXECUTION_TIMEOUT_S)) {
    throw new ConfigError(
      `Invalid \`${ENV.retryExecutionTimeout}\`: expected the retry function's durable execution timeout, a whole number of seconds from 1 to ${MAX_EXECUTION_TIMEOUT_S}, got ${describeValue(text)}`,
    );
  }
  return seconds * 1000;
}
