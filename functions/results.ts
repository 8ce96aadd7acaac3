import type { Cluster, Redis } from 'ioredis';
import { createRedis } from '../src/connections';
import { resolveOptions } from '../src/options';
import type { Order } from './order';

/**
 * Where the demo records what it processed, so `npm start` can check the run: per customer, the order
 * numbers in the order they were processed, and the set of processed orders. One hash tag per run: a run's
 * keys share a slot, so one MULTI writes them on a Redis Cluster (ElastiCache in cluster mode) too.
 */
export const resultKeys = {
  customer: (run: string, customerId: string): string => `kl-demo:{${run}}:customer:${customerId}`,
  processed: (run: string): string => `kl-demo:{${run}}:processed`,
  attempts: (run: string): string => `kl-demo:{${run}}:retried`,
  /** order id -> the charge id its durable step stored. */
  charges: (run: string): string => `kl-demo:{${run}}:charges`,
} as const;

/** Results expire: the demo's keys never pile up in a shared Redis. */
export const RESULT_TTL_SECONDS = 24 * 3600;

let redis: Promise<Redis | Cluster> | undefined;

/**
 * The group's own Redis, reached as the framework reaches it: the environment the plugin sets (one server or
 * cluster nodes, TLS, the AUTH token read from its secret). Deployed, that is the stack's ElastiCache; under
 * `serverless offline`, the local Redis. A failed connection is tried again at the next record.
 */
function connection(): Promise<Redis | Cluster> {
  redis ??= createRedis(resolveOptions({}).redis, { maxRetriesPerRequest: 2, connectTimeout: 2_000 }).catch((error: unknown) => {
    redis = undefined;
    throw error;
  });
  return redis;
}

/** Records one processed order (after its downstream call succeeded). */
export async function recordProcessed(order: Order, attempt: number, chargeId: string): Promise<void> {
  const customer = resultKeys.customer(order.run, order.customerId);
  const multi = (await connection())
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

/** Closes the recorder's connection, for a process that ends on its own (a test, a script). */
export async function disconnectRecorder(): Promise<void> {
  const open = redis;
  redis = undefined;
  if (open !== undefined) (await open).disconnect();
}
