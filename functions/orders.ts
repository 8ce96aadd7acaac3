import { lanes, NonRetriableError } from '../src';
import { callDownstream } from './downstream';
import { orderSchema } from './order';
import { recordProcessed } from './results';

/**
 * The example service's one handler: charges an order with the (simulated) payment system in a durable step, then
 * records it.
 * Orders of one customer run one at a time in the order they were placed, customers run concurrently; a
 * failing call goes through the retry tiers; a poison order, or a record that is not an order at all (it fails
 * the schema), goes to the dead-letter topic. The group, Redis and the retry tiers come from the environment
 * the kafka-lanes serverless plugin sets.
 */
export const handler = lanes(
  { value: orderSchema, concurrency: 200, retry: { maxAttempts: 5, backoff: { type: 'fixed', delayMs: 1_000 } } },
  async (record, ctx) => {
    const order = record.value;
    if (order.poison === true) throw new NonRetriableError(`order ${order.orderId} was refused by the payment system`);
    // Charged once per order: a retry (the recording below failed, a crash, a timeout) gets the stored charge back
    // instead of charging again; the idempotency key lets the payment system drop a charge cut off mid-call.
    const charge = await ctx.step('charge', () => callDownstream(order, ctx.signal, `${ctx.idempotencyKey}:charge`));
    await recordProcessed(order, ctx.attempt, charge.chargeId);
  },
);
