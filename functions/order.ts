import { z } from 'zod';

/** An order as the demo producer writes it; the record key is the customer id (one lane per customer). */
export const orderSchema = z.object({
  run: z.string(),
  orderId: z.string(),
  customerId: z.string(),
  /** 1, 2, 3, ... per customer: the order the customer placed them in. */
  seq: z.number().int().positive(),
  amount: z.number(),
  /** A record the downstream system will never accept. */
  poison: z.boolean().optional(),
});
export type Order = z.infer<typeof orderSchema>;
