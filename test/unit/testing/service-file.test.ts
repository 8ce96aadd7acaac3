/**
 * What `testLanes` reads of the service's serverless.yml: the `kafkaLanes` block of the test's group, as the plugin
 * gives it to the function (group, tiers, dead-letter policy, ordering, declared outputs), so that a send to a topic
 * the service does not declare fails in a test as it fails on AWS; and what it says when nothing is declared.
 */
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { lanes } from '../../../src';
import { ConfigError } from '../../../src/errors';
import { testLanes } from '../../../src/testing';
import { blockEnvironment, declarationFor, kafkaLanesBlocks, readServiceFile } from '../../../src/testing/service-file';

const SERVICE = join(__dirname, '..', '..', 'fixtures', 'service-file', 'serverless.yml');

/** The README's handler, reduced to its sends: the paid order, and a second send when the value names one. */
const readmeHandler = () =>
  lanes({ value: 'json' }, async (record, ctx) => {
    const order = record.value as { orderId: string; alsoTo?: string };
    ctx.send('orders-paid', { key: record.key, value: { orderId: order.orderId } });
    if (order.alsoTo !== undefined) ctx.send(order.alsoTo, { key: record.key, value: { orderId: order.orderId } });
  });

describe("the service's kafkaLanes blocks", () => {
  it('derives each group as the plugin does: the block, the trigger, the deployed name; a variable stays unknown', () => {
    const blocks = kafkaLanesBlocks({
      service: 'shop',
      provider: { stage: 'prod' },
      functions: {
        a: { kafkaLanes: { group: 'a-svc' } },
        b: { events: [{ kafka: { consumerGroupId: 'b-svc' } }], kafkaLanes: {} },
        c: { name: 'custom-c', kafkaLanes: {} },
        d: { kafkaLanes: {} },
        e: { kafkaLanes: { group: '${param:group}' } },
        plain: { handler: 'src/plain.handler' },
      },
    });
    expect(blocks.map((block) => [block.functionKey, block.group])).toEqual([
      ['a', 'a-svc'], ['b', 'b-svc'], ['c', 'custom-c'], ['d', 'shop-prod-d'], ['e', undefined],
    ]);
  });

  it("gives the plugin's environment: the block's settings, else the defaults, and no outputs when none are declared", () => {
    const [refunds, bare] = kafkaLanesBlocks({ service: 's', functions: { r: { kafkaLanes: { group: 'r', retryTiers: ['1s', '30s'], deadLetter: { policy: 'hold' }, ordering: 'partition', outputs: ['x', 'y'] } }, b: { kafkaLanes: { group: 'b' } } } });
    expect(blockEnvironment(refunds!, 'serverless.yml', new Set())).toEqual({
      KAFKA_LANES_GROUP: 'r', KAFKA_LANES_RETRY_TIERS: '1s,30s', KAFKA_LANES_DEAD_LETTER_POLICY: 'hold', KAFKA_LANES_ORDERING: 'partition', KAFKA_LANES_OUTPUTS: 'x,y',
    });
    expect(blockEnvironment(bare!, 'serverless.yml', new Set())).toEqual({
      KAFKA_LANES_GROUP: 'b', KAFKA_LANES_RETRY_TIERS: '5s,1m,10m', KAFKA_LANES_DEAD_LETTER_POLICY: 'release', KAFKA_LANES_ORDERING: 'key', KAFKA_LANES_OUTPUTS: '',
    });
  });

  it('refuses a setting it cannot resolve, naming it and the fix, unless the test gives it', () => {
    const [audit] = kafkaLanesBlocks({ functions: { audit: { kafkaLanes: { group: 'audit', outputs: '${param:auditOutputs}' } } } });
    const read = () => blockEnvironment(audit!, 'serverless.yml', new Set());
    expect(read).toThrow(ConfigError);
    expect(read).toThrow('serverless.yml: functions.audit.kafkaLanes.outputs: expected a list of names written out, got `"${param:auditOutputs}"`, which testLanes does not resolve: give it to testLanes (`outputs`), or `service: false`');
    expect(blockEnvironment(audit!, 'serverless.yml', new Set(['KAFKA_LANES_OUTPUTS']))).not.toHaveProperty('KAFKA_LANES_OUTPUTS');
  });

  it("finds the block of the test's group, the only one when no group is named, and says why when none fits", () => {
    const file = readServiceFile(SERVICE)!;
    expect(declarationFor(file, 'orders-svc', new Set())).toMatchObject({ found: true, functionKey: 'orders', env: { KAFKA_LANES_OUTPUTS: 'orders-paid' } });
    expect(declarationFor(file, 'refunds-svc', new Set())).toMatchObject({ found: true, functionKey: 'refunds', env: { KAFKA_LANES_DEAD_LETTER_POLICY: 'hold' } });
    expect(declarationFor(file, 'orders', new Set())).toEqual({
      found: false,
      why: `no \`kafkaLanes\` block of group \`orders\` in ${SERVICE} (its groups: \`orders-svc\`, \`refunds-svc\`, \`\${param:auditGroup}\`)`,
    });
    expect(declarationFor(file, undefined, new Set())).toMatchObject({ found: false });
    const single = { path: 'serverless.yml', blocks: kafkaLanesBlocks({ functions: { a: { kafkaLanes: { group: 'a' } } } }) };
    expect(declarationFor(single, undefined, new Set())).toMatchObject({ found: true, functionKey: 'a' });
  });
});

describe("testLanes with the service's serverless.yml", () => {
  let warn: jest.SpyInstance;
  beforeEach(() => (warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined)));
  afterEach(() => warn.mockRestore());

  it("fails a send to a topic the group's block does not declare, naming kafkaLanes.outputs, as the README's test is written", async () => {
    // Act: the README's test (the group and the topic only), its serverless.yml found by `service`.
    const t = testLanes(readmeHandler(), { group: 'orders-svc', topic: 'orders', service: SERVICE });
    await t.run([{ key: 'c-1', value: { orderId: 'o-1' } }, { key: 'c-2', value: { orderId: 'o-2', alsoTo: 'orders-shipped' } }]);

    // Assess: the declared send lands; the record with a stray one fails every attempt and is dead-lettered.
    expect(t.outputsTo('orders-paid').map((output) => output.key)).toEqual(['c-1']);
    expect(t.deadLetters.map((letter) => [letter.key, letter.reason])).toEqual([['c-2', 'attempts-exhausted']]);
    const expected = 'Expected ctx.send to a declared output topic (kafkaLanes.outputs: `orders-paid`), got `orders-shipped`';
    expect(t.deadLetters[0]?.error?.message).toContain(expected);
    // Said on the console once, so a test that only sees an output missing is told why.
    expect(warn.mock.calls.filter(([message]) => String(message).includes(expected))).toHaveLength(1);
  });

  it("runs with the block's tiers and dead-letter policy, as the plugin sets them", async () => {
    const t = testLanes(lanes({ value: 'json' }, async () => Promise.reject(new Error('down'))), { group: 'refunds-svc', service: SERVICE });
    await t.run([{ key: 'r-1', value: {} }]);
    expect(t.options.retry.tiers).toEqual(['1s', '30s']);
    expect(t.held.map((lane) => lane.key)).toEqual(['r-1']);
  });

  it('lets the test give what the file holds as a variable, and says once when no declaration is found anywhere', async () => {
    const withOutputs = testLanes(readmeHandler(), { group: 'orders', service: SERVICE, outputs: ['orders-paid', 'orders-shipped'] });
    await withOutputs.run([{ key: 'c-1', value: { orderId: 'o-1', alsoTo: 'orders-shipped' } }]);
    expect(withOutputs.outputs.map((output) => output.topic)).toEqual(['orders-paid', 'orders-shipped']);
    expect(warn).not.toHaveBeenCalled();

    for (const service of [SERVICE, false] as const) {
      const t = testLanes(readmeHandler(), { group: 'orders', service });
      await t.run([{ key: 'c-1', value: { orderId: 'o-1', alsoTo: 'anywhere' } }]);
      expect(t.outputs.map((output) => output.topic)).toEqual(['orders-paid', 'anywhere']);
    }
    const said = warn.mock.calls.map(([message]) => String(message)).filter((message) => message.includes('no output topics declared'));
    expect(said).toEqual([
      expect.stringContaining(`no output topics declared for group \`orders\` (no \`outputs\` option, no KAFKA_LANES_OUTPUTS in \`env\`, no \`kafkaLanes\` block of group \`orders\` in ${SERVICE}`),
    ]);
    expect(said[0]).toContain('where the deployed function may write only the topics of kafkaLanes.outputs');
  });
});

describe('testLanes as an on-demand Lambda environment', () => {
  it('logs cold_start: true at the first invocation of a Logger made after importing kafka-lanes/testing, false after', async () => {
    // Prepare: a handler module's Logger, made after the import of kafka-lanes/testing, as a test file imports them.
    const logger = new Logger({ serviceName: 'shop' });
    const lines: string[] = [];
    const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => (lines.push(String(chunk)), true));
    const handler = lanes({ value: 'json' }, async () => void logger.info('order received')).use(injectLambdaContext(logger, { resetKeys: true }));
    try {
      // Act
      const t = testLanes(handler, { group: 'shop-logged', service: false });
      await t.run([{ key: 'c-1', value: {} }]);
      await t.run([{ key: 'c-1', value: {} }]);
    } finally {
      write.mockRestore();
    }

    // Assess
    const logs = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((log) => log['message'] === 'order received');
    expect(logs.map((log) => log['cold_start'])).toEqual([true, false]);
  });
});
