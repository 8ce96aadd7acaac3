import { groupChecks, ownGroups, type GroupUse } from '../../../src/admin/doctor-groups';

const input = { group: 'orders-svc', sources: ['orders'], tiers: ['5s', '1m'] };
const use = (partial: Partial<GroupUse>): GroupUse => ({ state: 'Stable', protocolType: 'consumer', members: [], committedTopics: [], ...partial });
const consumer = (clientId: string, topics: string[]) => ({ clientId, clientHost: '/10.0.0.7', topics });

describe('ownGroups', () => {
  it('lists the source group, one group per retry tier and the completion group, with the topics each may use', () => {
    expect(ownGroups(input)).toEqual([
      { id: 'orders-svc', role: 'source trigger group', topics: ['orders'], memberless: false },
      { id: 'orders-svc.retry.5s', role: 'retry tier 5s trigger group', topics: ['orders-svc.retry.5s'], memberless: false },
      { id: 'orders-svc.retry.1m', role: 'retry tier 1m trigger group', topics: ['orders-svc.retry.1m'], memberless: false },
      {
        id: 'orders-svc.lanes',
        role: 'completion group (committed by the committer, no members)',
        topics: ['orders', 'orders-svc.retry.5s', 'orders-svc.retry.1m'],
        memberless: true,
      },
    ]);
  });
});

describe('groupChecks', () => {
  it('passes groups not in use yet and groups used only on their own topics, saying what was checked', () => {
    const rows = groupChecks(input, new Map([
      ['orders-svc', use({ members: [consumer('lambda-poller', ['orders'])], committedTopics: ['orders'] })],
      ['orders-svc.lanes', use({ state: 'Empty', committedTopics: ['orders', 'orders-svc.retry.5s'] })],
    ]));

    expect(rows.map((row) => [row.name, row.status])).toEqual([
      ['group orders-svc', 'ok'], ['group orders-svc.retry.5s', 'ok'], ['group orders-svc.retry.1m', 'ok'], ['group orders-svc.lanes', 'ok'],
    ]);
    expect(rows[0]?.detail).toBe('source trigger group: checked that its committed offsets and its members\' subscriptions name only `orders`: offsets for `orders`, 1 member(s)');
    expect(rows[1]?.detail).toContain('not in use yet');
    expect(rows[3]?.detail).toContain('and that it has no member');
  });

  it('fails a group with committed offsets for another topic, naming the topic', () => {
    const [row] = groupChecks(input, new Map([['orders-svc', use({ state: 'Empty', committedTopics: ['orders', 'payments'] })]]));

    expect(row).toEqual({ name: 'group orders-svc', status: 'fail', detail: expect.stringContaining('but it has committed offsets for `payments`: another consumer uses this group id') });
  });

  it('fails a group with a member subscribed to another topic, or a member that is not a Kafka consumer', () => {
    const rows = groupChecks(input, new Map([
      ['orders-svc.retry.5s', use({ members: [consumer('billing', ['invoices', 'orders-svc.retry.5s'])] })],
      ['orders-svc.retry.1m', use({ protocolType: 'connect', members: [{ clientId: 'worker', clientHost: '/10.0.0.8', topics: undefined }] })],
    ]));

    expect(rows[1]?.status).toBe('fail');
    expect(rows[1]?.detail).toContain('member `billing` from /10.0.0.7 subscribes to `invoices`');
    expect(rows[2]?.status).toBe('fail');
    expect(rows[2]?.detail).toContain('member `worker` from /10.0.0.8 is not a Kafka consumer (protocol `connect`)');
  });

  it('fails the completion group when anything joined it, whatever it subscribes to', () => {
    const rows = groupChecks(input, new Map([['orders-svc.lanes', use({ members: [consumer('kafka-lanes', ['orders'])] })]]));

    expect(rows[3]).toMatchObject({ status: 'fail', detail: expect.stringContaining('member `kafka-lanes` from /10.0.0.7 joined it') });
  });

  it('warns that the source and completion groups\' topics are not checked without a source topic, still judging the retry groups', () => {
    const rows = groupChecks({ ...input, sources: [] }, new Map([
      ['orders-svc', use({ committedTopics: ['anything'] })],
      ['orders-svc.retry.5s', use({ committedTopics: ['payments'] })],
    ]));

    expect(rows.map((row) => row.status)).toEqual(['warn', 'fail', 'ok', 'warn']);
    expect(rows[0]?.detail).toBe('source trigger group: topics not checked: give `--topic <name>` (or KAFKA_LANES_TOPICS); offsets for `anything`, 0 member(s)');
  });
});
