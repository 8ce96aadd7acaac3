import { setTimeout as sleep } from 'node:timers/promises';
import type { Order } from './order';

/** A transient failure of the downstream system: retried through the retry tiers. */
export class DownstreamUnavailableError extends Error {
  override readonly name = 'DownstreamUnavailableError';
}

function number(name: string, fallback: number): number {
  const text = process.env[name];
  const value = text === undefined || text === '' ? fallback : Number(text);
  if (!Number.isFinite(value) || value < 0) throw new Error(`Expected \`${name}\` to be a non-negative number, got \`${text}\``);
  return value;
}

// Read once per cold start, like every setting of a Lambda function.
const LATENCY_MS = number('DEMO_LATENCY_MS', 20);
const FAILURE_RATE = number('DEMO_FAILURE_RATE', 0);

/**
 * The charge at the payment system: takes `DEMO_LATENCY_MS` (±50 %) and fails with probability
 * `DEMO_FAILURE_RATE` (0..1), like a real dependency under load.
 */
export async function callDownstream(order: Order, signal: AbortSignal, idempotencyKey: string): Promise<{ chargeId: string }> {
  await sleep(LATENCY_MS * (0.5 + Math.random()), undefined, { signal });
  if (Math.random() < FAILURE_RATE) throw new DownstreamUnavailableError(`payment system unavailable for order ${order.orderId}`);
  // A real payment system answers a repeated key with the first charge; the simulated one derives the id from it.
  return { chargeId: `ch_${Buffer.from(idempotencyKey).toString('base64url').slice(-16)}` };
}
