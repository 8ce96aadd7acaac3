/**
 * The deploy rehearsal (support/deploy-rehearsal.ts) on every configuration the project deploys, each packaged by the
 * real framework (`serverless package`, no AWS credentials) and read with the dependency graph cfn-lint draws of it:
 * the example in the VPC it creates, in an existing VPC (with the stack's endpoints, and behind a NAT gateway), with a
 * provisioned cluster, a SCRAM service on an existing cluster, a service with configured brokers, and the README's own
 * service. Each must pass. Each fault planted in them (support/planted-faults.ts), the templates of earlier releases (a
 * fixture of the example as `serverless package --stage prod` built it before the topics resource's provider, and one
 * of before the retry function) and the old shape planted back into today's template must fail, naming what
 * CloudFormation would have done first or what the functions could not reach. The example of the release before the
 * retry function upgrades in place: its retry tiers' triggers keep their logical IDs and consumer groups and only
 * change the function they invoke.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { entrySources, projectFiles, readSnippets } from '../support/doc-snippets';
import { cfnGraph, rehearse, type RehearsalOptions, type Template } from './support/deploy-rehearsal';
import { README_REACH } from './support/readme-deploy';
import { BEHIND_NAT, CONFIGURED_BROKERS, EXAMPLE, PLANTED_FAULTS } from './support/planted-faults';
import { ROOT, serverless, service, serviceYml } from './support/serverless';

jest.setTimeout(600_000);

const EXISTING_VPC = ['--param', 'vpcId=vpc-0123456789abcdef0', '--param', 'subnetIds=subnet-0123456789abcdef0,subnet-0fedcba9876543210'];
const ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop/6a3f1c2e-8d4b-4f7a-9c21-5e0b7d9a1f34-2';
const SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:AmazonMSK_shop-AbCdEf';
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The README's project (its serverless.yml and handler), with the package installed as doc-snippets.test.ts installs it. */
function readmeService(): string {
  const readme = readSnippets(readFileSync(join(ROOT, 'README.md'), 'utf8'), 'README.md').snippets;
  const project = projectFiles(readme, []);
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; exports: Record<string, unknown> };
  const entries = entrySources(manifest.name, manifest.exports, (path) => existsSync(join(ROOT, path)));
  const files: Record<string, string> = {
    'package.json': JSON.stringify({ name: 'shop', private: true }),
    'node_modules/kafka-lanes/package.json': JSON.stringify({
      name: manifest.name,
      exports: { ...Object.fromEntries([...entries.keys()].map((entry, i) => [`.${entry.slice(manifest.name.length)}`, `./entry-${i}.ts`])), './serverless': './serverless.cjs' },
    }),
    'node_modules/kafka-lanes/serverless.cjs': `module.exports = require(${JSON.stringify(join(ROOT, 'src', 'serverless', 'plugin.cjs'))});\n`,
    ...Object.fromEntries([...entries.values()].map((source, i) => [`node_modules/kafka-lanes/entry-${i}.ts`, `export * from ${JSON.stringify(join(ROOT, source.replace(/\.ts$/, '')))};\n`])),
    ...Object.fromEntries([...project.values()].filter((file) => file.path !== 'serverless.yml').map((file) => [file.path!, file.text])),
  };
  return service(project.get('serverless.yml')!.text, files);
}

/** The topics a handler's source sends to: the literal first argument of each `ctx.send`. */
function sendsOf(source: string): string[] {
  return [...source.matchAll(/ctx\.send\(\s*['"]([^'"]+)['"]/g)].map((match) => match[1]!);
}

/** cfn-lint's verdict on a template: errors fail it (the exit status is a bit mask: 2 errors, 4 warnings). */
function cfnLintErrors(file: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile('cfn-lint', ['--format', 'parseable', '--', file], { maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve(code === -1 || (code & 3) !== 0 ? `cfn-lint exit ${code}: ${stdout}` : undefined);
    });
  });
}

interface Configuration {
  readonly name: string;
  readonly dir: () => string;
  readonly args: readonly string[];
  readonly options: (dir: string) => RehearsalOptions;
  /** Linted here (the example's configurations are linted by cfn-lint.test.ts). */
  readonly lint?: boolean;
}

const CONFIGURATIONS: readonly Configuration[] = [
  { name: EXAMPLE, dir: () => ROOT, args: [], options: () => ({}) },
  { name: 'the example in an existing VPC, with the endpoints the stack creates', dir: () => ROOT, args: EXISTING_VPC, options: () => ({}) },
  // The user declares the VPC's NAT gateway by `createEndpoints=false` (docs/deploy.md): it reaches every AWS API.
  { name: BEHIND_NAT, dir: () => ROOT, args: [...EXISTING_VPC, '--param', 'createEndpoints=false'], options: () => ({ declaredReach: ['*'] }) },
  { name: 'the example with a provisioned cluster', dir: () => ROOT, args: ['--param', 'msk=provisioned'], options: () => ({}) },
  {
    name: 'a SCRAM service on an existing cluster (its VPC with Secrets Manager and Lambda endpoints of its own)',
    dir: () =>
      service(
        serviceYml(`  orders:
    handler: handler.handler
    events:
      - msk: { arn: '${ARN}', topic: orders, saslScram512: '${SECRET}' }
    kafkaLanes: { group: shop-orders, outputs: [orders-paid], redis: { url: 'rediss://shop-redis.abc123.euw1.cache.amazonaws.com:6379' } }`),
      ),
    args: [],
    options: () => ({ declaredReach: ['secretsmanager', 'lambda'] }),
    lint: true,
  },
  {
    name: CONFIGURED_BROKERS,
    dir: () =>
      service(
        serviceYml(`  orders:
    handler: handler.handler
    events:
      - msk: { arn: '${ARN}', topic: orders }
    kafkaLanes:
      group: shop-orders
      kafka: { brokers: ['b-1.shop.abc123.c2.kafka.eu-west-1.amazonaws.com:9098', 'b-2.shop.abc123.c2.kafka.eu-west-1.amazonaws.com:9098'] }
      redis: { url: 'rediss://shop-redis.abc123.euw1.cache.amazonaws.com:6379' }`),
      ),
    args: [],
    // The retry function's checkpoints reach Lambda's API: through an endpoint of the VPC's own (or a NAT gateway).
    options: () => ({ declaredReach: ['lambda'] }),
    lint: true,
  },
  {
    name: "the README's own service",
    dir: readmeService,
    args: [],
    // What the README asks of the VPC: the pollers and the retry function's checkpoints reach Lambda (and STS).
    options: (dir) => ({ declaredReach: README_REACH, sends: { OrdersLambdaFunction: sendsOf(readFileSync(join(dir, 'src', 'orders.ts'), 'utf8')) } }),
    lint: true,
  },
];

type Packaged = { file: string; template: Template; options: RehearsalOptions };
const packagedOnce = new Map<string, Promise<Packaged>>();

/** A configuration packaged once per run (each package takes seconds); a fresh copy of its template each time. */
async function packaged(configuration: Configuration): Promise<Packaged> {
  if (!packagedOnce.has(configuration.name)) packagedOnce.set(configuration.name, packageAnew(configuration));
  const made = await packagedOnce.get(configuration.name)!;
  return { ...made, template: JSON.parse(JSON.stringify(made.template)) as Template };
}

const drawnOnce = new Map<string, ReturnType<typeof cfnGraph>>();

/** The graph of a packaged configuration's template, drawn once per run (cfn-lint takes seconds to start); a planted copy is drawn anew. */
function graphOf(file: string): ReturnType<typeof cfnGraph> {
  if (!drawnOnce.has(file)) drawnOnce.set(file, cfnGraph(file));
  return drawnOnce.get(file)!;
}

async function packageAnew(configuration: Configuration): Promise<Packaged> {
  const dir = configuration.dir();
  if (dir !== ROOT) dirs.push(dir);
  mkdirSync(join(ROOT, '.sls-tmp'), { recursive: true });
  const out = mkdtempSync(join(ROOT, '.sls-tmp', 'rehearsal-'));
  dirs.push(out);
  const { code, output } = await serverless(dir, ['package', '--stage', 'prod', '--package', out, ...configuration.args]);
  if (code !== 0) throw new Error(`serverless package (${configuration.name}) exited with ${code}:\n${output.slice(-4_000)}`);
  const file = join(out, 'cloudformation-template-update-stack.json');
  return { file, template: JSON.parse(readFileSync(file, 'utf8')) as Template, options: configuration.options(dir) };
}

describe('the deploy rehearsal', () => {
  it.each(CONFIGURATIONS.map((configuration) => [configuration.name, configuration] as const))('passes %s', async (_name, configuration) => {
    // Prepare
    const { file, template, options } = await packaged(configuration);

    // Act
    const rehearsal = rehearse(template, await graphOf(file), options);

    // Assess: nothing to find, and the topics resource needs its provider, its worker and their roles, all before it
    expect(rehearsal.problems).toEqual([]);
    const [topics, needs] = Object.entries(rehearsal.needs).find(([id]) => id.endsWith('KafkaLanesTopics'))!;
    expect(Object.keys(needs).filter((id) => /Topics(Vpc)?(Lambda|Kafka)/.test(id)).sort()).toEqual(
      ['OrdersTopicsKafkaLanesRole', 'OrdersTopicsLambdaFunction', 'OrdersTopicsVpcKafkaLanesRole', 'OrdersTopicsVpcLambdaFunction'],
    );
    // Created after all it needs, deleted before (CloudFormation deletes in the reverse order).
    for (const needed of Object.keys(needs)) expect(rehearsal.createOrder.indexOf(needed)).toBeLessThan(rehearsal.createOrder.indexOf(topics));
    if (configuration.lint === true) expect(await cfnLintErrors(file)).toBeUndefined();
    console.log(`deploy rehearsal, ${configuration.name}: ${rehearsal.createOrder.length} resources; ${topics} after ${Object.keys(needs).join(', ')}`);
  });

  it('fails the example as it was packaged before the provider: the answer path and MSK API are not in the order', async () => {
    // Prepare: the template `serverless package --stage prod` built before the provider (the topics function in the VPC)
    const file = join(ROOT, 'test', 'fixtures', 'templates', 'example-prod-before-provider.json');
    const template = JSON.parse(readFileSync(file, 'utf8')) as Template;

    // Act
    const rehearsal = rehearse(template, await cfnGraph(file));

    // Assess: CloudFormation could delete the S3 route and the subnets' routes before the resource's Delete is answered
    expect(rehearsal.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^OrdersKafkaLanesTopics does not depend on KafkaLanesS3Endpoint /),
        expect.stringMatching(/^OrdersKafkaLanesTopics does not depend on KafkaLanesSubnetARoutes /),
        expect.stringMatching(/^OrdersKafkaLanesTopics does not depend on KafkaLanesSubnetBRoutes /),
        expect.stringMatching(/OrdersTopicsLambdaFunction is in a VPC and calls kafka \(GetBootstrapBrokers\)/),
      ]),
    );
    console.log(`deploy rehearsal, the example before the provider:\n  - ${rehearsal.problems.join('\n  - ')}`);
  });

  it('upgrades a stack of before in place: the topics resource keeps its ServiceToken, which CloudFormation does not update', async () => {
    // Prepare
    const before = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'templates', 'example-prod-before-provider.json'), 'utf8')) as Template;
    const { template } = await packaged(CONFIGURATIONS[0]!);

    // Assess: the same function (logical ID, hence ARN) answers, now outside the VPC
    const token = (of: Template): unknown => of.Resources['OrdersKafkaLanesTopics']!.Properties!['ServiceToken'];
    expect(token(template)).toEqual(token(before));
    expect(template.Resources['OrdersTopicsLambdaFunction']!.Properties!['FunctionName']).toBe(before.Resources['OrdersTopicsLambdaFunction']!.Properties!['FunctionName']);
    expect(template.Resources['OrdersTopicsLambdaFunction']!.Properties!['VpcConfig']).toBeUndefined();
  });

  it("fails today's example with the old shape planted back: the in-VPC worker as the ServiceToken", async () => {
    // Prepare: the resource served by the worker itself, which then asks MSK for the brokers as the old function did
    const { file, template } = await packaged(CONFIGURATIONS[0]!);
    const resources = template.Resources as Record<string, { Type: string; Properties: Record<string, unknown> }>;
    resources['OrdersKafkaLanesTopics']!.Properties['ServiceToken'] = { 'Fn::GetAtt': ['OrdersTopicsVpcLambdaFunction', 'Arn'] };
    const worker = resources['OrdersTopicsVpcLambdaFunction']!.Properties as { Environment: { Variables: Record<string, unknown> } };
    worker.Environment.Variables['KAFKA_LANES_MSK_CLUSTER_ARN'] = { Ref: 'KafkaLanesMsk' };
    const planted = `${file}.planted.json`;
    writeFileSync(planted, JSON.stringify(template));

    // Act
    const rehearsal = rehearse(template, await cfnGraph(planted));

    // Assess
    expect(rehearsal.problems).toEqual([
      "OrdersKafkaLanesTopics: OrdersTopicsVpcLambdaFunction is in a VPC and calls s3 (its answer to CloudFormation's pre-signed S3 URL), but the VPC has no s3 endpoint in the template and no declared route to it (a NAT gateway or an endpoint of its own)",
      'OrdersKafkaLanesTopics: OrdersTopicsVpcLambdaFunction is in a VPC and calls kafka (GetBootstrapBrokers), but the VPC has no kafka endpoint in the template and no declared route to it (a NAT gateway or an endpoint of its own)',
      expect.stringMatching(/^OrdersTopicsVpcLambdaFunction \(the provider of OrdersKafkaLanesTopics\) is in a VPC/),
      'OrdersTopicsVpcLambdaFunction is in a VPC and calls kafka (GetBootstrapBrokers), but the VPC has no kafka endpoint in the template and no declared route to it (a NAT gateway or an endpoint of its own)',
    ]);
  });

  it.each(PLANTED_FAULTS.map((planted) => [planted.fault, planted] as const))('fails when %s', async (_fault, planted) => {
    // Prepare: the fault planted in a fresh copy of its configuration's template
    const configuration = CONFIGURATIONS.find((candidate) => candidate.name === planted.configuration)!;
    const { file, template, options } = await packaged(configuration);
    expect(rehearse(template, await graphOf(file), options).problems).toEqual([]);
    planted.plant(template);
    const plantedFile = `${file}.${PLANTED_FAULTS.indexOf(planted)}.json`;
    writeFileSync(plantedFile, JSON.stringify(template));

    // Act
    const rehearsal = rehearse(template, await cfnGraph(plantedFile), options);

    // Assess
    expect(rehearsal.problems).toEqual(expect.arrayContaining([expect.stringMatching(planted.found)]));
    console.log(`deploy rehearsal, ${planted.fault} (${planted.configuration}):\n  - ${rehearsal.problems.join('\n  - ')}`);
  });

  it("fails the example as the release before the retry function packaged it: the handler's retry tiers wait in running invocations", async () => {
    // Prepare
    const file = join(ROOT, 'test', 'fixtures', 'templates', 'example-prod-before-retry-function.json');
    const template = JSON.parse(readFileSync(file, 'utf8')) as Template;

    // Act
    const rehearsal = rehearse(template, await cfnGraph(file));

    // Assess
    expect(rehearsal.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^OrdersLambdaFunction has both a source trigger and retry tiers' triggers/),
        expect.stringMatching(/^OrdersLambdaFunction is invoked by the retry tiers' triggers .* but has no DurableConfig/),
      ]),
    );
  });

  it("upgrades a stack of the release before in place: each retry tier's trigger keeps its logical ID, topic, consumer group and start, and only changes the function it invokes", async () => {
    // Prepare: the example as the release before packaged it (`serverless package --stage prod`), and as today's does
    const before = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'templates', 'example-prod-before-retry-function.json'), 'utf8')) as Template;
    const { template: after } = await packaged(CONFIGURATIONS[0]!);
    const mappings = (of: Template): Record<string, Record<string, unknown>> =>
      Object.fromEntries(Object.entries(of.Resources).filter(([, r]) => r.Type === 'AWS::Lambda::EventSourceMapping').map(([id, r]) => [id, r.Properties!]));
    // What CloudFormation replaces an event source mapping for (template reference, AWS::Lambda::EventSourceMapping:
    // "Update requires: Replacement"): a replacement is created before the old mapping is deleted, and a Kafka consumer
    // group id cannot belong to two mappings at once.
    const replacing = (properties: Record<string, unknown>): unknown =>
      Object.fromEntries(['EventSourceArn', 'Topics', 'StartingPosition', 'StartingPositionTimestamp', 'AmazonManagedKafkaEventSourceConfig', 'SelfManagedEventSource', 'SelfManagedKafkaEventSourceConfig'].map((key) => [key, properties[key]]));

    // Assess: the same mappings, each updated in place
    expect(Object.keys(mappings(after)).sort()).toEqual(Object.keys(mappings(before)).sort());
    const retryIds = Object.keys(mappings(before)).filter((id) => /retry/.test(id));
    expect(retryIds).toHaveLength(3);
    for (const [id, properties] of Object.entries(mappings(before))) {
      expect({ id, ...(replacing(mappings(after)[id]!) as object) }).toEqual({ id, ...(replacing(properties) as object) });
      expect(properties['FunctionName']).toEqual({ 'Fn::GetAtt': ['OrdersLambdaFunction', 'Arn'] });
      // The source stays on the handler; each tier moves to the retry function's durable alias (`UpdateEventSourceMapping`).
      expect(mappings(after)[id]!['FunctionName']).toEqual(
        retryIds.includes(id) ? { 'Fn::Join': [':', [{ 'Fn::GetAtt': ['OrdersRetryLambdaFunction', 'Arn'] }, 'durable']] } : { 'Fn::GetAtt': ['OrdersLambdaFunction', 'Arn'] },
      );
    }
    // The retry function is new (Lambda enables durable execution only when it creates a function), and the handler's
    // role, which loses the tiers' reads, is updated after every tier's trigger has moved.
    expect(before.Resources['OrdersRetryLambdaFunction']).toBeUndefined();
    expect(after.Resources['OrdersRetryLambdaFunction']!.Properties!['DurableConfig']).toEqual({ ExecutionTimeout: 900, RetentionPeriodInDays: 7 });
    expect(after.Resources['OrdersKafkaLanesRole']!.DependsOn).toEqual(expect.arrayContaining(retryIds));
    // The topics resource runs again: the release is among its properties.
    expect(after.Resources['OrdersKafkaLanesTopics']!.Properties!['Version']).toEqual(expect.any(String));
    expect(before.Resources['OrdersKafkaLanesTopics']!.Properties!['Version']).toBeUndefined();
  });

  it('refuses, at package time, the example in an existing VPC without its subnets', async () => {
    // Act
    const refused = await serverless(ROOT, ['package', '--stage', 'prod', '--package', join(ROOT, '.sls-tmp', `no-subnets-${process.pid}`), '--param', 'vpcId=vpc-0123456789abcdef0']);
    rmSync(join(ROOT, '.sls-tmp', `no-subnets-${process.pid}`), { recursive: true, force: true });

    // Assess
    expect(refused.code).not.toBe(0);
    expect(refused.output).toContain('resources.Parameters.KafkaLanesSubnetIds: expected two or more private subnets of the existing VPC `vpc-0123456789abcdef0`');
  });

  it("fails the README's service without `vpc`, or when its handler sends to an undeclared topic", async () => {
    // Prepare: a service whose function sits in no VPC, reading MSK and writing ElastiCache's Redis
    const dir = service(
      serviceYml(
        `  orders:
    handler: handler.handler
    events:
      - msk: { arn: '${ARN}', topic: orders }
    kafkaLanes: { group: shop-orders, outputs: [orders-paid], redis: { url: 'rediss://shop-redis.abc123.euw1.cache.amazonaws.com:6379' } }`,
        'error',
        false,
      ),
    );
    dirs.push(dir);

    // Act
    const refused = await serverless(dir, ['package', '--stage', 'prod']);
    const { file, template } = await packaged(CONFIGURATIONS.find((configuration) => configuration.name === "the README's own service")!);
    const undeclared = rehearse(template, await graphOf(file), { declaredReach: README_REACH, sends: { OrdersLambdaFunction: ['orders-paid', 'orders-refunded'] } });

    // Assess: refused at package time, naming the fix; the rehearsal names the send MSK IAM would refuse
    expect(refused.code).not.toBe(0);
    expect(refused.output).toContain('functions.orders: expected a VPC for a function whose brokers or Redis are private, got none');
    expect(refused.output).toContain('`provider.vpc`');
    expect(undeclared.problems).toEqual(
      expect.arrayContaining([
        "OrdersLambdaFunction's code sends to `orders-refunded`, not a declared output (kafkaLanes.outputs: orders-paid): MSK IAM would refuse the write",
        expect.stringMatching(/^OrdersKafkaLanesRole does not grant WriteData on `orders-refunded`/),
      ]),
    );
  });
});
