/**
 * Every template kafka-lanes produces passes the CloudFormation linter (`cfn-lint`, which knows each resource's
 * schema and AWS's limits): the example as `serverless package` builds it (MSK Serverless, provisioned, an existing
 * VPC), a matrix of services (self-managed `kafka` trigger, SCRAM trigger, MSK IAM, an imported cluster ARN, the
 * triggers' schema registries, the longest names the plugin accepts, 20 retry tiers of a 64-character group), and infra/aws/ on its own.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, serverless, service, serviceYml } from './support/serverless';

// The framework's own loader for serverless.yml and `${file(...)}` (CloudFormation tags included).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const parse = require('osls/lib/utils/fs/parse') as (path: string, contents: Buffer) => Record<string, Record<string, unknown>>;

const ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop/abcd-1';
const SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:shop-kafka-AbCdEf';

// Each `serverless package` takes seconds, a minute on a loaded machine, and one of the checkout's root waits for
// another file's (support/checkout-lock.ts): more than the suite's default two minutes for a test.
jest.setTimeout(600_000);

/** cfn-lint's exit status is a bit mask: 2 errors, 4 warnings, 8 informational. */
function cfnLint(file: string): Promise<{ errors: boolean; output: string }> {
  return new Promise((resolve, reject) => {
    execFile('cfn-lint', ['--format', 'parseable', '--', file], { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      if (code === -1) reject(new Error(`cfn-lint could not run (${String(error?.message)}): install it with \`pip install cfn-lint\``));
      else resolve({ errors: (code & 2) !== 0 || (code & 1) !== 0, output: `${stdout}${stderr}` });
    });
  });
}


// Two services of several functions each (one package and one lint per service: each takes a while).
const MATRIX: ReadonlyArray<[string, string]> = [
  [
    'a self-managed kafka trigger (TLS), MSK triggers with a SCRAM secret (producers on TLS; producers on SCRAM with a Redis AUTH secret), an imported cluster ARN',
    serviceYml(`  selfManaged:
    handler: handler.handler
    events:
      - kafka:
          topic: orders
          bootstrapServers: [b-1.kafka.internal:9094, b-2.kafka.internal:9094]
          accessConfigurations: { vpcSubnet: [subnet-0123456789abcdef0], vpcSecurityGroup: [sg-0123456789abcdef0], serverRootCaCertificate: ['${SECRET}'] }
    kafkaLanes: { group: shop-orders, redis: { url: 'rediss://redis.internal:6379' } }
  scram:
    handler: handler.handler
    events:
      - msk: { arn: '${ARN}', topic: refunds, saslScram512: '${SECRET}' }
    kafkaLanes: { group: shop-refunds, kafka: { auth: tls }, redis: { url: 'rediss://redis.internal:6379' } }
  scramProducers:
    handler: handler.handler
    events:
      - msk: { arn: '${ARN}', topic: returns, saslScram512: '${SECRET}' }
    kafkaLanes: { group: shop-returns, redis: { url: 'rediss://redis.internal:6379', authSecret: 'ssm:/shop/redis-token' } }
  selfManagedScram:
    handler: handler.handler
    events:
      - kafka:
          topic: payouts
          bootstrapServers: [b-1.kafka.internal:9096]
          accessConfigurations: { vpcSubnet: [subnet-0123456789abcdef0], vpcSecurityGroup: [sg-0123456789abcdef0], saslScram512Auth: ['${SECRET}'] }
    kafkaLanes: { group: shop-payouts, redis: { url: 'rediss://redis.internal:6379', authSecret: shop/redis-auth } }
  imported:
    handler: handler.handler
    events:
      - msk: { arn: { 'Fn::ImportValue': shop-kafka-arn }, topic: invoices }
    kafkaLanes: { group: shop-invoices, redis: { url: 'rediss://redis.internal:6379' } }`),
  ],
  [
    'MSK IAM in provisioned mode, the triggers\' schema registries (Glue, imported; Confluent, with its secrets), a cron committer, and the longest names the plugin accepts',
    serviceYml(`  orders:
    handler: handler.handler
    events:
      - msk: { arn: '${ARN}', topic: orders, provisionedPollerConfig: { minimumPollers: 1, maximumPollers: 4 } }
    kafkaLanes: { group: shop-orders, retryTiers: [5s, 1m], redis: { clusterNodes: [redis.internal:6379], tls: true }, deadLetter: { policy: hold } }
  payments:
    handler: handler.handler
    events:
      - msk: { arn: '${ARN}', topic: payments }
    kafkaLanes: { group: shop-payments, redis: { url: 'rediss://redis.internal:6379' }, committer: { schedule: 'cron(0/5 * * * ? *)' } }
  glueRegistry:
    handler: handler.handler
    events:
      - msk: { arn: '${ARN}', topic: shipments, provisionedPollerConfig: { minimumPollers: 1, maximumPollers: 2 } }
    kafkaLanes:
      group: shop-shipments
      redis: { url: 'rediss://redis.internal:6379' }
      schemaRegistry: { schemaRegistryUri: { 'Fn::ImportValue': shop-registry-arn }, schemaValidationConfigs: [{ attribute: KEY }, { attribute: VALUE }] }
  confluentRegistry:
    handler: handler.handler
    events:
      - kafka:
          topic: refunds
          bootstrapServers: [b-1.kafka.internal:9096]
          accessConfigurations: { vpcSubnet: [subnet-0123456789abcdef0], vpcSecurityGroup: [sg-0123456789abcdef0], saslScram512Auth: ['${SECRET}'] }
          provisionedPollerConfig: { minimumPollers: 1, maximumPollers: 2 }
    kafkaLanes:
      group: shop-refunds
      redis: { url: 'rediss://redis.internal:6379' }
      schemaRegistry:
        schemaRegistryUri: https://registry.shop.io
        eventRecordFormat: JSON
        accessConfigs: [{ type: BASIC_AUTH, uri: '${SECRET}' }, { type: SERVER_ROOT_CA_CERTIFICATE, uri: '${SECRET}' }]
  ${'o'.repeat(40)}:
    name: ${'f'.repeat(54)}
    handler: handler.handler
    events:
      - msk: { arn: '${ARN}', topic: ${'t'.repeat(200)} }
    kafkaLanes: { group: ${'g'.repeat(70)}, retryTiers: [5s, 1m, 10m], redis: { url: 'rediss://redis.internal:6379' } }`),
  ],
  [
    'the most retry tiers (20) of a 64-character group on an imported cluster ARN, outputs and an e-mailed alarm topic',
    serviceYml(`  orders:
    handler: handler.handler
    events:
      - msk: { arn: { 'Fn::ImportValue': shop-kafka-arn }, topic: orders, maximumBatchingWindow: 0 }
    kafkaLanes:
      group: ${'g'.repeat(64)}
      retryTiers: [${Array.from({ length: 20 }, (_unused, index) => `${index + 1}m`).join(', ')}]
      outputs: [orders-paid, orders-refused]
      redis: { url: 'rediss://redis.internal:6379', authSecret: shop/redis-auth }
      alarms: { email: ops@shop.io }`),
  ],
];

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('cfn-lint', () => {
  it.each([
    ['the example (MSK Serverless)', []],
    ['the example (provisioned MSK)', ['--param', 'msk=provisioned']],
    [
      'the example in an existing VPC (no endpoints of its own)',
      ['--param', 'vpcId=vpc-0123456789abcdef0', '--param', 'subnetIds=subnet-0123456789abcdef0,subnet-0fedcba9876543210', '--param', 'createEndpoints=false'],
    ],
  ])('accepts %s as serverless package builds it', async (_what, args) => {
    // Prepare
    mkdirSync(join(ROOT, '.sls-tmp'), { recursive: true });
    const out = mkdtempSync(join(ROOT, '.sls-tmp', 'lint-example-'));
    dirs.push(out);

    // Act
    const packaged = await serverless(ROOT, ['package', '--stage', 'prod', '--package', out, ...args]);
    const lint = await cfnLint(join(out, 'cloudformation-template-update-stack.json'));

    // Assess
    expect({ code: packaged.code, output: packaged.code === 0 ? '' : packaged.output }).toEqual({ code: 0, output: '' });
    expect(lint).toEqual({ errors: false, output: expect.any(String) });
    // W3005: a DependsOn that a Fn::GetAtt already implies (the framework's, on the per-function roles): dropped.
    expect(lint.output).not.toContain('W3005');
    if (lint.output !== '') console.log(`cfn-lint warnings, ${_what}:\n${lint.output}`);
  });

  it.each(MATRIX)('accepts a service with %s', async (what, text) => {
    // Prepare
    const dir = service(text);
    dirs.push(dir);

    // Act
    const packaged = await serverless(dir, ['package']);
    const lint = packaged.code === 0 ? await cfnLint(join(dir, '.serverless', 'cloudformation-template-update-stack.json')) : undefined;

    // Assess
    expect({ code: packaged.code, output: packaged.code === 0 ? '' : packaged.output }).toEqual({ code: 0, output: '' });
    expect(lint?.errors).toBe(false);
    expect(lint?.output).not.toContain('W3005');
    if (lint?.output !== '') console.log(`cfn-lint warnings, ${what}:\n${lint?.output}`);
  });

  it.each(readdirSync(join(ROOT, 'infra', 'aws')).filter((file) => file.startsWith('msk-')))(
    'accepts infra/aws/ on its own: network.yml, %s and redis.yml as one template',
    async (msk) => {
      // Prepare: the fragments merged as the framework merges `resources:`.
      const merged: Record<string, Record<string, unknown>> = { Parameters: {}, Conditions: {}, Resources: {}, Outputs: {} };
      for (const file of ['network.yml', msk, 'redis.yml']) {
        const path = join(ROOT, 'infra', 'aws', file);
        const fragment = parse(path, readFileSync(path));
        for (const section of Object.keys(merged)) Object.assign(merged[section]!, fragment[section] ?? {});
      }
      const dir = service('service: unused\n');
      dirs.push(dir);
      const file = join(dir, 'infra.json');
      writeFileSync(file, JSON.stringify({ AWSTemplateFormatVersion: '2010-09-09', ...merged }, null, 2));

      // Act
      const lint = await cfnLint(file);

      // Assess
      expect(lint).toEqual({ errors: false, output: '' });
    },
  );
});
