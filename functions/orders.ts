import { lanes, NonRetriableError } from '../src';
import { callDownstream } from './downstream';
import { recordProcessed } from './results';

/** An order as the demo producer writes it; the record key is the customer id (one lane per customer). */
export interface Order {
  readonly run: string;
  readonly orderId: string;
  readonly customerId: string;
  /** 1, 2, 3, ... per customer: the order the customer placed them in. */
  readonly seq: number;
  readonly amount: number;
  /** A record the downstream system will never accept. */
  readonly poison?: boolean;
}

function isOrder(value: unknown): value is Order {
  const order = value as Partial<Order> | null;
  return (
    typeof order === 'object' && order !== null &&
    typeof order.run === 'string' && typeof order.orderId === 'string' && typeof order.customerId === 'string' &&
    Number.isSafeInteger(order.seq) && typeof order.amount === 'number'
  );
}

/**
 * The example service's one handler: settles an order with the (simulated) payment system, then records it.
 * Orders of one customer run one at a time in the order they were placed, customers run concurrently; a
 * failing call goes through the retry tiers, a poison order to the dead-letter topic. The group, Redis and
 * the retry tiers come from the environment the kafka-lanes serverless plugin sets.
 */
export const handler = lanes<unknown>(
  { value: 'json', concurrency: 200, retry: { maxAttempts: 5, backoff: { type: 'fixed', delayMs: 1_000 } } },
  async (record, ctx) => {
    const order = record.value;
    if (!isOrder(order)) throw new NonRetriableError('not an order: expected run, orderId, customerId, seq and amount');
    if (order.poison === true) throw new NonRetriableError(`order ${order.orderId} was refused by the payment system`);
    await callDownstream(order, ctx.signal);
    await recordProcessed(order, ctx.attempt);
  },
);
