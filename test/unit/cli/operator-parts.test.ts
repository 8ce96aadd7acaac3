import { tiersOfTopics } from '../../../src/cli/operator-parts';

describe('tiersOfTopics', () => {
  it("reads a group's tiers from its retry topics, shortest delay first", () => {
    const topics = ['orders', 'orders-svc.retry.10m', 'orders-svc.retry.5s', 'orders-svc.retry.1m', 'orders-svc.dlq', 'orders-svc.lanes'];
    expect(tiersOfTopics('orders-svc', topics)).toEqual(['5s', '1m', '10m']);
  });

  it("ignores other groups' topics and names that are not a duration", () => {
    expect(tiersOfTopics('orders', ['orders-svc.retry.5s', 'orders.retry.later', 'orders.retry.250ms'])).toEqual(['250ms']);
    expect(tiersOfTopics('orders', ['orders', 'orders.dlq'])).toBeUndefined();
  });
});
