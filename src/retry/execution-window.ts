/**
 * What a round of the suspend loop (`suspend-loop.ts`) knows of its durable execution, and how it learns it locally:
 * small and apart from the loop, because every handler asks it on every invocation (`lanes()`), while the loop and
 * its rules load only with a round.
 */
/** The durable execution a round belongs to. */
export interface ExecutionWindow {
  /** When the execution started (epoch ms); absent for its first round, which reads its own clock. */
  readonly startedAtMs?: number | undefined;
  /** How long the execution may last (its `DurableConfig.ExecutionTimeout`), in ms. */
  readonly timeoutMs: number;
}

/**
 * Where the offline trigger tells a handler that an invocation is a round of a durable execution, and of which: a key
 * of the invocation's client context (`custom`), so the event stays what AWS sends. On AWS a durable invocation says
 * so itself (its event is the durable envelope); no event source mapping sends a client context.
 */
export const ROUND_CONTEXT_KEY = 'kafka-lanes.round';

/** The client context that makes an invocation a round of `execution` (what `roundOf` reads back). */
export function roundClientContext(execution: ExecutionWindow): { custom: Record<string, ExecutionWindow> } {
  return { custom: { [ROUND_CONTEXT_KEY]: execution } };
}

/**
 * The execution an invocation is a round of, from its Lambda context's client context; `undefined` for any other
 * invocation. Pure.
 *
 * @example
 * roundOf({ clientContext: roundClientContext({ startedAtMs: t, timeoutMs: 900_000 }) }); // { startedAtMs: t, timeoutMs: 900_000 }
 */
export function roundOf(context: { readonly clientContext?: unknown }): ExecutionWindow | undefined {
  const custom = (context.clientContext as { custom?: Record<string, unknown> } | null | undefined)?.custom;
  const round = custom?.[ROUND_CONTEXT_KEY] as { startedAtMs?: unknown; timeoutMs?: unknown } | undefined;
  if (round === undefined || typeof round.timeoutMs !== 'number' || !(round.timeoutMs > 0)) return undefined;
  return typeof round.startedAtMs === 'number' ? { startedAtMs: round.startedAtMs, timeoutMs: round.timeoutMs } : { timeoutMs: round.timeoutMs };
}
