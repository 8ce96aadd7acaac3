/**
 * The deploy rehearsal (support/deploy-rehearsal.ts) on every configuration the project deploys, each packaged by the
 * real framework (`serverless package`, no AWS credentials) and read with the dependency graph cfn-lint draws of it:
 * the example in the VPC it creates, in an existing VPC (with the stack's endpoints, and behind a NAT gateway), with a
 * provisioned cluster, a SCRAM service on an existing cluster, and the README's own service. Each must pass; the
 * templates of before the topics resource's provider (a fixture of the example as `serverless package --stage prod`
 * built it then) and the old shape planted back into today's template must fail, naming what CloudFormation would
 * have deleted first or what the functions could not reach.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { entrySources, projectFiles, readSnippets } from '../support/doc-snippets';
import { cfnGraph, rehearse, type RehearsalOptions, type Template } from './support/deploy-rehearsal';
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
  { name: 'the example in the VPC it creates (MSK Serverless)', dir: () => ROOT, args: [], options: () => ({}) },
  { name: 'the example in an existing VPC, with the endpoints the stack creates', dir: () => ROOT, args: EXISTING_VPC, options: () => ({}) },
  // The user declares the VPC's NAT gateway by `createEndpoints=false` (docs/deploy.md): it reaches every AWS API.
  { name: 'the example in an existing VPC behind a NAT gateway', dir: () => ROOT, args: [...EXISTING_VPC, '--param', 'createEndpoints=false'], options: () => ({ declaredReach: ['*'] }) },
  { name: 'the example with a provisioned cluster', dir: () => ROOT, args: ['--param', 'msk=provisioned'], options: () => ({}) },
  {
    name: 'a SCRAM service on an existing cluster (its VPC with a Secrets Manager endpoint of its own)',
    dir: () =>
      service(
        serviceYml(`  orders:
    handler: handler.handler
    events:
      - msk: { arn: '${ARN}', topic: orders, saslScram512: '${SECRET}' }
    kafkaLanes: { group: shop-orders, outputs: [orders-paid], redis: { url: 'rediss://shop-redis.abc123.euw1.cache.amazonaws.com:6379' } }`),
      ),
    args: [],
    options: () => ({ declaredReach: ['secretsmanager'] }),
    lint: true,
  },
  {
    name: "the README's own service",
    dir: readmeService,
    args: [],
    options: (dir) => ({ sends: { OrdersLambdaFunction: sendsOf(readFileSync(join(dir, 'src', 'orders.ts'), 'utf8')) } }),
    lint: true,
  },
];

async function packaged(configuration: Configuration): Promise<{ file: string; template: Template; options: RehearsalOptions }> {
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
    const rehearsal = rehearse(template, await cfnGraph(file), options);

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
      'OrdersTopicsVpcLambdaFunction is in a VPC and calls kafka (GetBootstrapBrokers), but the VPC has no kafka endpoint in the template and no declared route to it (a NAT gateway or an endpoint of its own)',
    ]);
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
    const { file, template } = await packaged(CONFIGURATIONS[5]!);
    const undeclared = rehearse(template, await cfnGraph(file), { sends: { OrdersLambdaFunction: ['orders-paid', 'orders-refunded'] } });

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
