/**
 * The offline trigger's side of a durable function (docs/local.md, "Retries under `serverless offline`"): what Lambda's
 * durable execution service does for an event source mapping's invocation, played with serverless-offline's runtime.
 * Each round of the suspend loop is an invocation of its own (serverless-offline prints its `Duration / Billed
 * Duration` line), told through its client context that it is a round and of which execution; between rounds the
 * execution waits on a timer, billing nothing, and a stop of the trigger ends that wait at once.
 */
import { sleep } from '../../deadline';
import type { KafkaBatchResponse } from '../../event';
import type { Waiting } from '../../engine/run-scope';
import { suspendLoop, type ExecutionWindow, type RoundOutcome } from '../../retry/suspend-loop';

/** What one function's invocations cost, as Lambda bills them. */
export interface FunctionFigures {
  /** Invocations (a durable execution's rounds each count). */
  invocations: number;
  /** Each invocation's duration rounded up to the millisecond, summed (Lambda's `Billed Duration`). */
  billedMs: number;
  /** Durable executions, and how long they waited suspended between rounds (not billed). */
  executions: number;
  suspendedMs: number;
}

/** What one execution cost, as Lambda bills it: its rounds' run time; its waits are not billed. */
export interface ExecutionFigures {
  readonly rounds: number;
  /** Each round's duration rounded up to the millisecond, summed (Lambda's `Billed Duration`). */
  readonly billedMs: number;
  readonly suspendedMs: number;
}

/** How an execution ended: its final round's answer, a round's error, or left waiting when the trigger stopped. */
export type ExecutionEnd =
  | { readonly kind: 'answered'; readonly response: unknown; readonly figures: ExecutionFigures }
  | { readonly kind: 'failed'; readonly error: unknown; readonly figures: ExecutionFigures }
  | { readonly kind: 'left'; readonly waiting: Waiting; readonly figures: ExecutionFigures };

/** What an execution is given. */
export interface ExecutionPorts {
  /** Runs one round of the event through the Lambda runtime, as a round of `execution`; resolves with its response. */
  runRound(execution: ExecutionWindow): Promise<unknown>;
  /** The trigger's stop: it ends a wait between rounds at once. */
  readonly stopSignal: AbortSignal;
  /** The execution's timeout (the function's `durableConfig.executionTimeout`), in ms. */
  readonly timeoutMs: number;
}

/** Thrown out of a wait the trigger's stop ended: the loop stops there, its copies still waiting. */
class Stopped extends Error {}

/**
 * Plays one durable execution of an event: rounds and waits (`suspendLoop`) until nothing waits or the trigger stops.
 * A response that is not a round's outcome (a function not built with `lanes()`, which ignores the client context)
 * is the execution's answer at once.
 *
 * @example
 * const end = await playExecution({ runRound: (execution) => invokeRound(event, execution), stopSignal, timeoutMs: 900_000 });
 */
export async function playExecution(ports: ExecutionPorts): Promise<ExecutionEnd> {
  let rounds = 0;
  let billedMs = 0;
  let suspendedMs = 0;
  let last: RoundOutcome | undefined;
  let foreign: { response: unknown } | undefined;
  const figures = (): ExecutionFigures => ({ rounds, billedMs, suspendedMs });
  try {
    const response = await suspendLoop({
      round: async (_index, execution) => {
        const started = performance.now();
        let answer: unknown;
        try {
          answer = await ports.runRound(execution);
        } finally {
          rounds += 1;
          billedMs += Math.ceil(performance.now() - started);
        }
        if (isRoundOutcome(answer)) return (last = answer);
        foreign = { response: answer };
        return { response: { batchItemFailures: [] }, startedAtMs: execution.startedAtMs ?? 0, endedAtMs: Date.now() };
      },
      wait: async (_index, seconds) => {
        const started = performance.now();
        await sleep(seconds * 1000, ports.stopSignal);
        suspendedMs += performance.now() - started;
        if (ports.stopSignal.aborted) throw new Stopped();
      },
    }, { startedAtMs: Date.now(), timeoutMs: ports.timeoutMs });
    return { kind: 'answered', response: foreign?.response ?? (response satisfies KafkaBatchResponse), figures: figures() };
  } catch (error) {
    if (error instanceof Stopped && last?.waiting !== undefined) return { kind: 'left', waiting: last.waiting, figures: figures() };
    return { kind: 'failed', error, figures: figures() };
  }
}

/**
 * A durable execution's line, in the manner of Lambda's `REPORT` line: what it billed (its rounds) and how long it
 * waited suspended (billed nothing).
 *
 * @example
 * executionReport('ordersRetry', 3, end); // '(λ: ordersRetry) REPORT DurableExecution: offline-3  Rounds: 2  Billed Duration: 41 ms  Suspended: 5000 ms  Status: SUCCEEDED'
 */
export function executionReport(functionKey: string, number: number, end: ExecutionEnd): string {
  const status = end.kind === 'answered' ? 'SUCCEEDED' : end.kind === 'failed' ? 'FAILED' : 'STOPPED';
  const { rounds, billedMs, suspendedMs } = end.figures;
  return `(λ: ${functionKey}) REPORT DurableExecution: offline-${number}  Rounds: ${rounds}  Billed Duration: ${billedMs} ms  Suspended: ${Math.round(suspendedMs)} ms  Status: ${status}`;
}

/**
 * What a stop did with an execution left waiting: its batch is not committed, so its copies are read again, and run
 * when due, once the trigger starts again.
 */
export function leftUncommitted(functionKey: string, partitions: readonly string[], waiting: Waiting): string {
  const { copies } = waiting;
  return `kafka-lanes offline: ${functionKey}: ${copies} cop${copies === 1 ? 'y' : 'ies'} waiting in ${partitions.join(', ')} left uncommitted: ` +
    'they run when the trigger starts again (none is lost or run before it is due)';
}

/** A round's outcome as `LanesCore.round` returns it (through a worker thread: plain JSON). */
function isRoundOutcome(value: unknown): value is RoundOutcome {
  const outcome = value as Partial<RoundOutcome> | null;
  return typeof outcome === 'object' && outcome !== null && typeof outcome.startedAtMs === 'number' && typeof outcome.endedAtMs === 'number'
    && typeof outcome.response === 'object' && outcome.response !== null && Array.isArray(outcome.response.batchItemFailures);
}
