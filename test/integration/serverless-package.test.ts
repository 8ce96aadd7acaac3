/**
 * `serverless package` with the kafka-lanes plugin, offline and without AWS credentials: the CloudFormation
 * it generates (event source mappings, the committer and its schedule, IAM, environment) and the
 * configuration it refuses. Runs the real framework (osls) on the example service and on small services
 * written for one case each.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const SERVERLESS = join(ROOT, 'node_modules', '.bin', 'serverless');
const ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop/abcd-1';

interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
}

// No credentials of any kind: packaging must not need AWS.
const NO_AWS = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('AWS_')));
const ENV = { ...NO_AWS, AWS_SHARED_CREDENTIALS_FILE: '/nonexistent', AWS_CONFIG_FILE: '/nonexistent', AWS_EC2_METADATA_DISABLED: 'true' };

function serverless(cwd: string, args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(SERVERLESS, args, { cwd, env: ENV, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, output: `${stdout}${stderr}` });
    });
  });
}

/** An ES module of a bundle and the chunks it imports statically, transitively (what loading it reads). */
function staticallyImported(file: string, seen = new Set<string>()): string[] {
  if (seen.has(file)) return [];
  seen.add(file);
  const imports = [...readFileSync(file, 'utf8').matchAll(/(?:^|[;\s}])import\s*(?:[\w{}\s,*$]+from\s*)?["'](\.{1,2}\/[^"']+)["']/g)].map((match) => join(dirname(file), match[1]!));
  return [file, ...imports.flatMap((imported) => staticallyImported(imported, seen))];
}

function template(dir: string): Record<string, Resource> {
  return (JSON.parse(readFileSync(join(dir, 'cloudformation-template-update-stack.json'), 'utf8')) as { Resources: Record<string, Resource> }).Resources;
}

function ofType(resources: Record<string, Resource>, type: string): Resource[] {
  return Object.values(resources).filter((resource) => resource.Type === type);
}

/** A service of its own under .local/ (inside the repository, so `kafka-lanes/serverless` resolves to it). */
function service(yml: string): string {
  mkdirSync(join(ROOT, '.local'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, '.local', 'sls-package-'));
  writeFileSync(join(dir, 'serverless.yml'), yml);
  writeFileSync(join(dir, 'handler.ts'), 'export const handler = async (): Promise<{ batchItemFailures: [] }> => ({ batchItemFailures: [] });\n');
  return dir;
}

function yml(fn: string, mode = 'warn'): string {
  return `service: shop
configValidationMode: ${mode}
provider:
  name: aws
  runtime: nodejs22.x
  region: eu-west-1
plugins:
  - kafka-lanes/serverless
functions:
  orders:
    handler: handler.handler
${fn}`;
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('serverless package with kafka-lanes/serverless', () => {
  it('packages the example service offline: retry-tier triggers, consumer groups, committer, schedule, IAM, environment, bundles', async () => {
    // Prepare
    const out = mkdtempSync(join(ROOT, '.local', 'sls-example-'));
    dirs.push(out);

    // Act
    const { code, output } = await serverless(ROOT, ['package', '--package', out]);

    // Assess
    expect({ code, output }).toMatchObject({ code: 0 });
    const resources = template(out);
    const mappings = ofType(resources, 'AWS::Lambda::EventSourceMapping').map((m) => m.Properties);
    expect(mappings.map((m) => [m['Topics'], (m['AmazonManagedKafkaEventSourceConfig'] as { ConsumerGroupId: string }).ConsumerGroupId, m['StartingPosition'], m['BatchSize']])).toEqual([
      [['orders'], 'orders-svc', 'TRIM_HORIZON', 500],
      [['orders-svc.retry.1s'], 'orders-svc.retry.1s', 'TRIM_HORIZON', 500],
      [['orders-svc.retry.5s'], 'orders-svc.retry.5s', 'TRIM_HORIZON', 500],
      [['orders-svc.retry.30s'], 'orders-svc.retry.30s', 'TRIM_HORIZON', 500],
    ]);
    for (const mapping of mappings) {
      expect(mapping['FunctionName']).toEqual({ 'Fn::GetAtt': ['OrdersLambdaFunction', 'Arn'] });
      // On demand: no partial batch response; the handler is told so and fails the invocation instead.
      expect(mapping['FunctionResponseTypes']).toBeUndefined();
    }

    const functions = Object.fromEntries(ofType(resources, 'AWS::Lambda::Function').map((f) => [f.Properties['FunctionName'], f.Properties]));
    const orders = functions['kafka-lanes-example-dev-orders']!;
    expect(orders['Runtime']).toBe('nodejs22.x');
    expect(orders['Handler']).toBe('dist-lambda/functions/orders.handler');
    expect((orders['Environment'] as { Variables: Record<string, string> }).Variables).toMatchObject({
      KAFKA_LANES_GROUP: 'orders-svc',
      KAFKA_LANES_RETRY_TIERS: '1s,5s,30s',
      KAFKA_LANES_PARTIAL_BATCH_RESPONSE: 'false',
      KAFKA_LANES_REDIS_URL: 'redis://127.0.0.1:6379',
      KAFKA_LANES_BROKERS: '127.0.0.1:9092',
    });
    const committer = functions['kafka-lanes-example-dev-orders-committer']!;
    expect(committer['Handler']).toBe('dist-lambda/kafka-lanes/committer.handler');
    expect(committer['Runtime']).toBe('nodejs22.x');
    expect((committer['Environment'] as { Variables: Record<string, string> }).Variables).toMatchObject({ KAFKA_LANES_GROUP: 'orders-svc' });
    const [rule] = ofType(resources, 'AWS::Events::Rule');
    expect(rule?.Properties).toMatchObject({ ScheduleExpression: 'rate(1 minute)', State: 'ENABLED' });
    expect(JSON.stringify(rule?.Properties['Targets'])).toContain('OrdersCommitterLambdaFunction');

    const statements = (resources['IamRoleLambdaExecution']!.Properties['Policies'] as Array<{ PolicyDocument: { Statement: Array<{ Action: string[] }> } }>)[0]!
      .PolicyDocument.Statement;
    const actions = statements.flatMap((s) => s.Action);
    expect(actions).toEqual(expect.arrayContaining(['kafka-cluster:*', 'kafka:GetBootstrapBrokers', 'ec2:CreateNetworkInterface', 'ec2:DeleteNetworkInterface']));

    const zip = readFileSync(join(out, 'kafka-lanes-example.zip')).toString('latin1');
    // ES modules with splitting: each handler's file and the chunks, read when a handler first imports them.
    const files = ['dist-lambda/functions/orders.mjs', 'dist-lambda/kafka-lanes/committer.mjs', 'dist-lambda/chunks/', 'node_modules/'];
    expect(files.map((file) => [file, zip.includes(file)])).toEqual([
      ['dist-lambda/functions/orders.mjs', true],
      ['dist-lambda/kafka-lanes/committer.mjs', true],
      ['dist-lambda/chunks/', true],
      ['node_modules/', false],
    ]);
    // The Lua scripts travel inside the bundle: in what each handler's file imports at load.
    for (const bundle of ['functions/orders.mjs', 'kafka-lanes/committer.mjs']) {
      expect(staticallyImported(join(ROOT, 'dist-lambda', bundle)).map((file) => readFileSync(file, 'utf8')).join('\n')).toContain("redis.call('SETBIT'");
    }
  });

  it('reports batch item failures on every trigger of a provisioned-mode function, and tells the handler', async () => {
    // Prepare
    const dir = service(
      yml(`    events:
      - msk: { arn: '${ARN}', topic: orders, batchSize: 100, provisionedPollerConfig: { minimumPollers: 1 } }
    kafkaLanes: { group: shop-orders, retryTiers: [5s] }`),
    );
    dirs.push(dir);

    // Act
    const { code, output } = await serverless(dir, ['package']);

    // Assess
    expect({ code, output }).toMatchObject({ code: 0 });
    const resources = template(join(dir, '.serverless'));
    const mappings = ofType(resources, 'AWS::Lambda::EventSourceMapping').map((m) => m.Properties);
    expect(mappings).toHaveLength(2);
    for (const mapping of mappings) {
      expect(mapping['FunctionResponseTypes']).toEqual(['ReportBatchItemFailures']);
      expect(mapping['ProvisionedPollerConfig']).toEqual({ MinimumPollers: 1 });
    }
    const fn = ofType(resources, 'AWS::Lambda::Function').find((f) => f.Properties['FunctionName'] === 'shop-dev-orders')!;
    expect((fn.Properties['Environment'] as { Variables: Record<string, string> }).Variables['KAFKA_LANES_PARTIAL_BATCH_RESPONSE']).toBe('true');
  });

  it.each([
    ['an unknown key (the framework schema, error mode)', 'error', `    events: [{ msk: { arn: '${ARN}', topic: orders } }]\n    kafkaLanes: { retryTier: [5s] }`, /retryTier/],
    ['an unknown key (the plugin, warn mode)', 'warn', `    events: [{ msk: { arn: '${ARN}', topic: orders } }]\n    kafkaLanes: { retryTier: [5s] }`, /functions\.orders\.kafkaLanes: unknown key `retryTier`/],
    ['a wrong value', 'warn', `    events: [{ msk: { arn: '${ARN}', topic: orders } }]\n    kafkaLanes: { retryTiers: [5 seconds] }`, /functions\.orders\.kafkaLanes\.retryTiers\.0: a duration/],
    ['a timeout over 14 minutes', 'warn', `    timeout: 900\n    events: [{ msk: { arn: '${ARN}', topic: orders } }]\n    kafkaLanes: {}`, /functions\.orders\.timeout: expected at most 840 seconds/],
    ['a batch size over 10,000', 'warn', `    events: [{ msk: { arn: '${ARN}', topic: orders, batchSize: 20000 } }]\n    kafkaLanes: {}`, /batchSize: expected an integer from 1 to 10,000, got 20000/],
  ])('fails on %s, naming it', async (_what, mode, fn, message) => {
    // Prepare
    const dir = service(yml(fn, mode));
    dirs.push(dir);

    // Act
    const { code, output } = await serverless(dir, ['package']);

    // Assess
    expect(code).not.toBe(0);
    expect(output).toMatch(message);
  });
});
