/** One order the demo produced. */
export interface ProducedOrder {
  readonly orderId: string;
  readonly customerId: string;
  readonly seq: number;
  /** Poison: the handler refuses it (non-retriable), or its value is not JSON at all. */
  readonly poison: boolean;
}

export interface RunResults {
  /** Per customer, the order numbers in the order the handler finished them. */
  readonly processedSeqs: ReadonlyMap<string, readonly number[]>;
  readonly processedIds: ReadonlySet<string>;
  readonly deadLetteredIds: ReadonlySet<string>;
}

export interface RunCheck {
  readonly ok: boolean;
  readonly produced: number;
  readonly processed: number;
  readonly deadLettered: number;
  /** Orders neither processed nor dead-lettered. */
  readonly missing: readonly string[];
  /** Orders processed that should have been refused, or both processed and dead-lettered. */
  readonly unexpected: readonly string[];
  /** Customers whose orders finished out of order. */
  readonly outOfOrder: ReadonlyArray<{ customerId: string; seqs: readonly number[] }>;
  /** Orders processed more than once (at-least-once allows it after a crash; a clean run has none). */
  readonly duplicates: number;
}

/**
 * Checks a demo run against what was produced: every order processed or dead-lettered (poison ones
 * dead-lettered), none both, and per customer the processed orders finished in the order they were placed.
 * Pure.
 *
 * @example
 * checkRun(produced, { processedSeqs, processedIds, deadLetteredIds }).ok;
 */
export function checkRun(produced: readonly ProducedOrder[], results: RunResults): RunCheck {
  const missing: string[] = [];
  const unexpected: string[] = [];
  for (const order of produced) {
    const processed = results.processedIds.has(order.orderId);
    const dead = results.deadLetteredIds.has(order.orderId);
    if (!processed && !dead) missing.push(order.orderId);
    else if (processed && (dead || order.poison)) unexpected.push(order.orderId);
  }
  const outOfOrder: Array<{ customerId: string; seqs: readonly number[] }> = [];
  let duplicates = 0;
  for (const [customerId, seqs] of results.processedSeqs) {
    const seen = new Set<number>();
    let last = 0;
    let ordered = true;
    for (const seq of seqs) {
      if (seen.has(seq)) {
        duplicates += 1;
        continue;
      }
      seen.add(seq);
      if (seq < last) ordered = false;
      last = seq;
    }
    if (!ordered) outOfOrder.push({ customerId, seqs });
  }
  const ids = new Set(produced.map((order) => order.orderId));
  const processed = [...results.processedIds].filter((id) => ids.has(id)).length;
  const deadLettered = [...results.deadLetteredIds].filter((id) => ids.has(id)).length;
  return {
    ok: missing.length === 0 && unexpected.length === 0 && outOfOrder.length === 0,
    produced: produced.length,
    processed,
    deadLettered,
    missing,
    unexpected,
    outOfOrder,
    duplicates,
  };
}

/**
 * The demo load: `count` orders over `customers` customers, each customer's orders numbered 1, 2, 3...;
 * every `poisonEvery`-th order is poison (alternately refused by the handler and not JSON at all). Pure.
 */
export function demoOrders(run: string, count: number, customers: number, poisonEvery: number): ProducedOrder[] {
  const next = new Map<string, number>();
  const orders: ProducedOrder[] = [];
  for (let i = 0; i < count; i += 1) {
    const customerId = `customer-${String(i % customers).padStart(3, '0')}`;
    const seq = (next.get(customerId) ?? 0) + 1;
    next.set(customerId, seq);
    orders.push({ orderId: `${run}-${i}`, customerId, seq, poison: poisonEvery > 0 && i % poisonEvery === poisonEvery - 1 });
  }
  return orders;
}
