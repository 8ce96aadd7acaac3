import { checkRun, demoOrders } from '../../../infra/local/demo/check';

describe('the npm start summary check', () => {
  const orders = demoOrders('r', 12, 3, 5); // orders 5 and 10 (index 4 and 9) are poison

  function results(processed: Record<string, number[]>, dead: string[]) {
    const byCustomer = new Map(Object.entries(processed));
    const ids = new Set(orders.filter((o) => (processed[o.customerId] ?? []).includes(o.seq)).map((o) => o.orderId));
    return { processedSeqs: byCustomer, processedIds: ids, deadLetteredIds: new Set(dead) };
  }

  it('numbers each customer orders 1, 2, 3... and marks every n-th one poison', () => {
    expect(orders.map((o) => `${o.customerId}#${o.seq}${o.poison ? '!' : ''}`)).toEqual([
      'customer-000#1', 'customer-001#1', 'customer-002#1', 'customer-000#2', 'customer-001#2!', 'customer-002#2',
      'customer-000#3', 'customer-001#3', 'customer-002#3', 'customer-000#4!', 'customer-001#4', 'customer-002#4',
    ]);
  });

  it('passes a run where every order was processed in order or dead-lettered', () => {
    // Act
    const check = checkRun(orders, results({ 'customer-000': [1, 2, 3], 'customer-001': [1, 3, 4], 'customer-002': [1, 2, 3, 4] }, ['r-4', 'r-9']));

    // Assess
    expect(check).toMatchObject({ ok: true, produced: 12, processed: 10, deadLettered: 2, duplicates: 0 });
  });

  it('fails on a missing order, a processed poison order and a customer out of order', () => {
    // Act
    const check = checkRun(orders, results({ 'customer-000': [1, 3, 2], 'customer-001': [1, 2, 3, 4], 'customer-002': [1, 2, 3] }, ['r-9']));

    // Assess
    expect(check.ok).toBe(false);
    expect(check.missing).toEqual(['r-11']);
    expect(check.unexpected).toEqual(['r-4']);
    expect(check.outOfOrder).toEqual([{ customerId: 'customer-000', seqs: [1, 3, 2] }]);
  });

  it('counts a repeated order as a duplicate, not as out of order', () => {
    // Act
    const check = checkRun(orders, results({ 'customer-000': [1, 2, 2, 3], 'customer-001': [1, 3, 4], 'customer-002': [1, 2, 3, 4] }, ['r-4', 'r-9']));

    // Assess
    expect(check).toMatchObject({ ok: true, duplicates: 1 });
  });
});
