import { topicChecks, type TopicState } from '../../../src/admin';

const state = (topic: string, partitions: number): TopicState => ({ topic, partitions, retentionMs: 604_800_000, maxMessageBytes: 1_048_588, cleanupPolicy: 'delete' });

describe('topicChecks with declared outputs', () => {
  it('passes an output topic that exists and fails one that does not, saying what creates it', () => {
    // Prepare
    const states = new Map([['orders', state('orders', 6)], ['shipments', state('shipments', 3)], ['g.retry.5s', state('g.retry.5s', 6)], ['g.dlq', state('g.dlq', 6)]]);

    // Act
    const rows = topicChecks({ group: 'g', sources: ['orders'], tiers: ['5s'], outputs: ['shipments', 'invoices'] }, states);

    // Assess
    expect(rows.filter((row) => row.name === 'topic shipments' || row.name === 'topic invoices')).toEqual([
      { name: 'topic shipments', status: 'ok', detail: 'output, 3 partitions' },
      {
        name: 'topic invoices',
        status: 'fail',
        detail: "output topic `invoices` does not exist (the stack's topics resource or `topics ensure --output` creates it): ctx.send to it fails every record",
      },
    ]);
  });
});
