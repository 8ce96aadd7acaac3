/**
 * The CloudWatch alarms and dashboard the kafka-lanes plugin adds, in the template `serverless package` writes
 * (offline, no AWS credentials), checked by `cfn-lint` (AWS's CloudFormation linter, preinstalled on the CI image).
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { ofType, serverless, service, serviceYml, template, type Resource } from './support/serverless';

const ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop/abcd-1';
// `serverless package` and cfn-lint per test: seconds each, a minute or more on a loaded machine.
jest.setTimeout(600_000);

/** cfn-lint on `file`: its exit status and what it printed. */
function lint(file: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile('cfn-lint', [file], { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, output: `${stdout}${stderr}` });
    });
  });
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Packages a one-function service with `kafkaLanes` (`service()`: a folder of this checkout, so the plugin is this one). */
async function packaged(kafkaLanes: string): Promise<{ code: number; output: string; dir: string; resources: () => Record<string, Resource> }> {
  const dir = service(serviceYml(`  orders:
    handler: handler.handler
    events:
      - msk: { arn: '${ARN}', topic: orders }
    kafkaLanes:
      group: orders-svc
${kafkaLanes}`));
  dirs.push(dir);
  const result = await serverless(dir, ['package', '--package', join(dir, 'out')]);
  return { ...result, dir, resources: () => template(join(dir, 'out')) };
}

describe('CloudWatch alarms and dashboard of the kafka-lanes plugin', () => {
  it('adds the alarms, a dashboard and an SNS topic by default, in a template cfn-lint accepts', async () => {
    // Act
    const { code, output, dir, resources } = await packaged('');
    const linted = await lint(join(dir, 'out', 'cloudformation-template-update-stack.json'));

    // Assess
    expect({ code, output }).toMatchObject({ code: 0 });
    // cfn-lint's exit status is a bit mask (2 errors, 4 warnings): no error, and no error line.
    expect({ errors: (linted.code & 2) !== 0, lines: linted.output.split('\n').filter((line) => /^E\d{4}/.test(line)) }).toEqual({ errors: false, lines: [] });
    const alarms = ofType(resources(), 'AWS::CloudWatch::Alarm').map((a) => a.Properties);
    expect(alarms.map((a) => [a['AlarmName'], a['Namespace'], a['MetricName'], a['Threshold']])).toEqual([
      ['shop-dev-orders-svc-dead-letters', 'KafkaLanes', 'RecordsDeadLettered', 0],
      ['shop-dev-orders-svc-refused-by-broker', 'KafkaLanes', 'RecordsRefusedByBroker', 0],
      ['shop-dev-orders-svc-oldest-blocked-lane', 'KafkaLanes', 'OldestBlockedLaneAge', 900_000],
      ['shop-dev-orders-svc-committed-lag', 'KafkaLanes', 'CommittedLag', 100_000],
      ['shop-dev-orders-svc-committer-errors', 'AWS/Lambda', 'Errors', 0],
    ]);
    // The dimensions the functions' EMF lines carry (Powertools: `service`, then the default `group`).
    expect(alarms[0]!['Dimensions']).toEqual([{ Name: 'service', Value: 'kafka-lanes' }, { Name: 'group', Value: 'orders-svc' }]);
    expect(alarms[4]!['Dimensions']).toEqual([{ Name: 'FunctionName', Value: 'shop-dev-orders-committer' }]);
    for (const alarm of alarms) expect(alarm['AlarmActions']).toEqual([{ Ref: 'KafkaLanesAlarmTopic' }]);
    expect(ofType(resources(), 'AWS::SNS::Topic')).toHaveLength(1);
    const [dashboard] = ofType(resources(), 'AWS::CloudWatch::Dashboard');
    expect(dashboard?.Properties['DashboardName']).toBe('shop-dev-orders-svc');
    const body = JSON.parse((dashboard?.Properties['DashboardBody'] as { 'Fn::Sub': string })['Fn::Sub']) as { widgets: Array<{ properties: { title: string } }> };
    expect(body.widgets.map((w) => w.properties.title)).toEqual([
      'alarms of orders-svc', 'committed lag (records behind)', 'blocked lanes', 'records per minute', 'dead letters and refusals per minute',
      'handler latency (ms)', 'retry function runs', 'committer runs',
    ]);
  });

  it('takes thresholds and an existing SNS topic from the kafkaLanes block, and passes cfn-lint', async () => {
    // Act
    const topic = 'arn:aws:sns:eu-west-1:123456789012:ops-pager';
    const { code, output, dir, resources } = await packaged(`      alarms:
        notify: ${topic}
        period: 10m
        oldestBlockedLane: 30m
        deadLetters: 5
        committedLag: 5000
        dashboard: false
`);
    const linted = await lint(join(dir, 'out', 'cloudformation-template-update-stack.json'));

    // Assess
    expect({ code, output }).toMatchObject({ code: 0 });
    // cfn-lint's exit status is a bit mask (2 errors, 4 warnings): no error, and no error line.
    expect({ errors: (linted.code & 2) !== 0, lines: linted.output.split('\n').filter((line) => /^E\d{4}/.test(line)) }).toEqual({ errors: false, lines: [] });
    const alarms = Object.fromEntries(ofType(resources(), 'AWS::CloudWatch::Alarm').map((a) => [a.Properties['MetricName'], a.Properties]));
    expect(alarms['RecordsDeadLettered']).toMatchObject({ Threshold: 5, Period: 600, AlarmActions: [topic] });
    expect(alarms['OldestBlockedLaneAge']).toMatchObject({ Threshold: 1_800_000 });
    expect(alarms['CommittedLag']).toMatchObject({ Threshold: 5000, Period: 600, EvaluationPeriods: 3 });
    expect(ofType(resources(), 'AWS::SNS::Topic')).toEqual([]);
    expect(ofType(resources(), 'AWS::CloudWatch::Dashboard')).toEqual([]);
  });

  it('encrypts the topic it creates with a key CloudWatch may use, subscribes the e-mail given, and passes cfn-lint', async () => {
    // Act
    const { code, output, dir, resources } = await packaged('      alarms:\n        email: ops@shop.io\n');
    const linted = await lint(join(dir, 'out', 'cloudformation-template-update-stack.json'));

    // Assess
    expect({ code, output }).toMatchObject({ code: 0 });
    expect({ errors: (linted.code & 2) !== 0, lines: linted.output.split('\n').filter((line) => /^E\d{4}/.test(line)) }).toEqual({ errors: false, lines: [] });
    const [topic] = ofType(resources(), 'AWS::SNS::Topic');
    expect(topic?.Properties).toMatchObject({ KmsMasterKeyId: { Ref: 'KafkaLanesAlarmKey' }, Subscription: [{ Protocol: 'email', Endpoint: 'ops@shop.io' }] });
    expect(ofType(resources(), 'AWS::KMS::Key')).toHaveLength(1);
  });

  it('adds nothing with `alarms: { enabled: false }`', async () => {
    const { code, resources } = await packaged('      alarms:\n        enabled: false\n');
    expect(code).toBe(0);
    expect(Object.values(resources()).filter((r) => r.Type.startsWith('AWS::CloudWatch') || r.Type === 'AWS::SNS::Topic')).toEqual([]);
  });

  it.each([
    ['period: 90s', /kafkaLanes\.alarms\.period'?: must match pattern|alarms\.period: a whole number of minutes/],
    ['period: 25h', /alarms\.period: a whole number of minutes from `1m` to `24h`/],
    ['oldestLane: 5m', /alarms.*unrecognized property 'oldestLane'|alarms: unknown key `oldestLane`/],
    ['deadLetters: -1', /kafkaLanes\.alarms\.deadLetters/],
  ])('refuses `alarms: { %s }`, saying where and what', async (line, message) => {
    const { code, output } = await packaged(`      alarms:\n        ${line}\n`);
    expect(code).not.toBe(0);
    expect(output).toMatch(message);
  });
});
