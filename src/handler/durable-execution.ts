/**
 * The suspend loop on AWS Lambda durable functions (docs/ARCHITECTURE.md, "The suspend loop"). Imported only when an
 * invocation is a durable one (`lanes.ts`), so a handler that never is loads nothing of the SDK.
 *
 * An event source mapping invokes a durable function synchronously and waits for the whole execution (at most 15
 * minutes), then reads its result as the invocation's response (Lambda developer guide, "Event source mappings with
 * durable functions"). Each round is a durable step: its outcome is checkpointed, and a replay (Lambda invokes the
 * function again after each wait, running it from the start) returns it instead of running the round again. Each
 * wait is a durable wait: the execution is suspended and no compute is billed until it ends.
 */
import { withDurableExecution, type DurableContext } from '@aws/durable-execution-sdk-js';
import type { Context } from 'aws-lambda';
import type { KafkaBatchResponse } from '../event';
import { retryExecutionTimeoutMs, suspendLoop, type ExecutionWindow, type RoundOutcome } from '../retry/suspend-loop';

/** Runs one round of the event in a Lambda invocation (`LanesCore.round`). */
export type RunRound = (event: unknown, context: Context, execution: ExecutionWindow) => Promise<RoundOutcome>;

/**
 * The durable handler of a retry function: the suspend loop, each round a step and each wait a durable wait. A round
 * that throws is not retried as a step: the execution fails and the event source mapping sends the batch again, as it
 * does when a plain invocation fails (every copy the failed round settled is done: G7 skips it).
 *
 * `timeoutMs`: the execution's timeout, by default what the plugin sets (`KAFKA_LANES_RETRY_EXECUTION_TIMEOUT`), read
 * here, once: only a durable retry function has one, and this module loads with its first invocation.
 *
 * @example
 * const handler = durableRetryHandler((event, context, execution) => fn.round(event, context, execution));
 */
export function durableRetryHandler(round: RunRound, timeoutMs = retryExecutionTimeoutMs(process.env)): (event: unknown, context: Context) => Promise<unknown> {
  const loop = async (event: unknown, durable: DurableContext): Promise<KafkaBatchResponse> =>
    suspendLoop({
      round: (index, execution) => durable.step(`round-${index}`, () => round(event, durable.lambdaContext, execution), { retryStrategy: () => ({ shouldRetry: false }) }),
      wait: (index, seconds) => durable.wait(`wait-${index}`, { seconds }),
    }, { timeoutMs });
  return withDurableExecution(loop) as (event: unknown, context: Context) => Promise<unknown>;
}
