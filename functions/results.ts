import { Redis } from 'ioredis';
import type { Order } from './orders';

/**
 * Where the demo records what it processed, so `npm start` can check the run: per customer, the order
 * numbers in the order they were processed, and the set of processed orders.
 */
export const resultKeys = {
  customer: (run: string, customerId: string): string => `kl-demo:${run}:customer:${customerId}`,
  processed: (run: string): string => `kl-demo:${run}:processed`,
  attempts: (run: string): string => `kl-demo:${run}:retried`,
  /** order id -> the charge id its durable step stored. */
  charges: (run: string): string => `kl-demo:${run}:charges`,
} as const;

/** Results expire: the demo's keys never pile up in a shared Redis. */
export const RESULT_TTL_SECONDS = 24 * 3600;

let redis: Redis | undefined;

function connection(): Redis {
  redis ??= new Redis(process.env['DEMO_RESULTS_REDIS_URL'] ?? process.env['KAFKA_LANES_REDIS_URL'] ?? 'redis://127.0.0.1:6379', {
    maxRetriesPerRequest: 2,
  });
  return redis;
}

/** Records one processed order (after its downstream call succeeded). */
export async function recordProcessed(order: Order, attempt: number, chargeId: string): Promise<void> {
  const customer = resultKeys.customer(order.run, order.customerId);
  const multi = connection()
    .multi()
    .rpush(customer, String(order.seq))
    .expire(customer, RESULT_TTL_SECONDS)
    .sadd(resultKeys.processed(order.run), order.orderId)
    .hset(resultKeys.charges(order.run), order.orderId, chargeId)
    .expire(resultKeys.charges(order.run), RESULT_TTL_SECONDS)
    .expire(resultKeys.processed(order.run), RESULT_TTL_SECONDS);
  if (attempt > 1) multi.sadd(resultKeys.attempts(order.run), order.orderId).expire(resultKeys.attempts(order.run), RESULT_TTL_SECONDS);
  await multi.exec();
}
