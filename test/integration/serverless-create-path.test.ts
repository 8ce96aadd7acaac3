/**
 * The first deploy of a stage. On a stack that does not exist yet the framework (osls) creates it from its core
 * template (the deployment bucket, no `Parameters`) and then updates it with the service's template; both
 * requests carry `provider.stackParameters`, and CloudFormation refuses a parameter its template does not
 * declare. These tests package a service, restore its state as `serverless deploy` does (serverless-state.json)
 * and build the create and update requests with osls's own functions, for both deployment methods.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, serverless, service, serviceYml } from './support/serverless';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';

/* eslint-disable @typescript-eslint/no-require-imports */
const shared = require('osls/lib/plugins/aws/lib/get-shared-stack-action-params') as Record<string, unknown>;
const createStack = require('osls/lib/plugins/aws/lib/get-create-stack-params') as Record<string, unknown>;
const createChangeSet = require('osls/lib/plugins/aws/lib/get-create-change-set-params') as Record<string, unknown>;
const updateStack = require('osls/lib/plugins/aws/lib/get-update-stack-params') as Record<string, unknown>;
const naming = require('osls/lib/plugins/aws/lib/naming') as Record<string, unknown>;
/* eslint-enable @typescript-eslint/no-require-imports */

interface Template {
  Parameters?: Record<string, { Default?: unknown }>;
}
interface Provider {
  stage: string;
  deploymentMethod?: string;
  stackParameters?: Array<{ ParameterKey: string; ParameterValue: string }>;
  coreCloudFormationTemplate: Template;
}
interface Request {
  Parameters: Array<{ ParameterKey: string; ParameterValue?: string }>;
  TemplateBody?: string;
}

/** osls's deploy plugin as far as its stack requests go, on the state `serverless deploy --package` restores. */
function deployer(dir: string): { provider: Provider; create(method: 'direct' | 'changesets'): Request; update(method: 'direct' | 'changesets'): Request } {
  const state = JSON.parse(readFileSync(join(dir, 'serverless-state.json'), 'utf8')) as { service: { service: string; provider: Provider } };
  const provider = state.service.provider;
  const serverlessObject = { service: state.service };
  const awsProvider = { serverless: serverlessObject, getStage: () => provider.stage, getCustomDeploymentRole: () => undefined };
  const context = {
    ...shared,
    ...createStack,
    ...createChangeSet,
    ...updateStack,
    serverless: serverlessObject,
    provider: { ...awsProvider, naming: { ...naming, provider: awsProvider } },
  } as unknown as {
    getCreateStackParams(options: { templateBody?: unknown; templateUrl?: string }): Request;
    getCreateChangeSetParams(options: { changeSetType: string; templateBody?: unknown; templateUrl?: string }): Request;
    getUpdateStackParams(options: { templateUrl: string }): Request;
  };
  const withMethod = <T>(method: string, call: () => T): T => {
    provider.deploymentMethod = method;
    return call();
  };
  const templateUrl = 'https://s3.amazonaws.com/bucket/template.json';
  return {
    provider,
    // create-stack.js: a stack that does not exist is created from the core template.
    create: (method) =>
      withMethod(method, () =>
        method === 'direct'
          ? context.getCreateStackParams({ templateBody: provider.coreCloudFormationTemplate })
          : context.getCreateChangeSetParams({ changeSetType: 'CREATE', templateBody: provider.coreCloudFormationTemplate }),
      ),
    // update-stack.js: then every deploy updates it with the compiled template.
    update: (method) =>
      withMethod(method, () =>
        method === 'direct' ? context.getUpdateStackParams({ templateUrl }) : context.getCreateChangeSetParams({ changeSetType: 'UPDATE', templateUrl }),
      ),
  };
}

/** What CloudFormation would refuse: parameters sent that the template does not declare, declared ones without a value. */
function mismatch(request: Request, template: Template): { undeclared: string[]; missing: string[] } {
  const declared = template.Parameters ?? {};
  const sent = request.Parameters.map((parameter) => parameter.ParameterKey);
  return {
    undeclared: sent.filter((key) => !(key in declared)),
    missing: Object.entries(declared)
      .filter(([key, parameter]) => parameter.Default === undefined && !sent.includes(key))
      .map(([key]) => key),
  };
}

// Each `serverless package` takes seconds, a minute on a loaded machine, and one of the checkout's root waits for
// another file's (support/checkout-lock.ts): more than the suite's default two minutes for a test.
jest.setTimeout(600_000);

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function packageExample(args: string[]): Promise<string> {
  mkdirSync(join(ROOT, '.sls-tmp'), { recursive: true });
  const out = mkdtempSync(join(ROOT, '.sls-tmp', 'create-path-'));
  dirs.push(out);
  const packaged = await serverless(ROOT, ['package', '--stage', 'prod', '--package', out, ...args]);
  expect({ code: packaged.code, output: packaged.code === 0 ? '' : packaged.output }).toEqual({ code: 0, output: '' });
  return out;
}

describe('the first deploy of a stage', () => {
  it.each([
    ['a created VPC', [], { KafkaLanesVpcId: '', KafkaLanesSubnetIds: '', KafkaLanesCreateEndpoints: 'true' }],
    [
      'an existing VPC',
      ['--param', 'vpcId=vpc-0123456789abcdef0', '--param', 'subnetIds=subnet-0a,subnet-0b', '--param', 'lambdaEndpoint=false', '--param', 'stsEndpoint=false'],
      {
        KafkaLanesVpcId: 'vpc-0123456789abcdef0',
        KafkaLanesSubnetIds: 'subnet-0a,subnet-0b',
        KafkaLanesCreateEndpoints: 'true',
        KafkaLanesCreateLambdaEndpoint: 'false',
        KafkaLanesCreateStsEndpoint: 'false',
      },
    ],
  ])('sends the example\'s create and update requests only parameters their templates declare (%s)', async (_what, args, defaults) => {
    // Prepare
    const out = await packageExample(args);
    const compiled = JSON.parse(readFileSync(join(out, 'cloudformation-template-update-stack.json'), 'utf8')) as Template;
    const core = JSON.parse(readFileSync(join(out, 'cloudformation-template-create-stack.json'), 'utf8')) as Template;
    const deploy = deployer(out);

    // Act
    const requests = (['direct', 'changesets'] as const).map((method) => ({ method, create: deploy.create(method), update: deploy.update(method) }));

    // Assess: the create request carries the core template, which is what package wrote, and nothing is refused.
    for (const { create } of requests) expect(JSON.parse(create.TemplateBody ?? 'null')).toEqual(core);
    expect(requests.map(({ method, create, update }) => ({ method, create: mismatch(create, core), update: mismatch(update, compiled) }))).toEqual([
      { method: 'direct', create: { undeclared: [], missing: [] }, update: { undeclared: [], missing: [] } },
      { method: 'changesets', create: { undeclared: [], missing: [] }, update: { undeclared: [], missing: [] } },
    ]);
    // The stage's values reach the stack as the parameters' defaults.
    const given = Object.fromEntries(Object.keys(defaults).map((key) => [key, compiled.Parameters?.[key]?.Default]));
    expect(given).toEqual(defaults);
  });

  it('finds the parameter that would fail a create: a service with provider.stackParameters is warned about', async () => {
    // Prepare
    const dir = service(
      serviceYml('  orders:\n    handler: handler.handler\n').replace(
        '  region: eu-west-1\n',
        "  region: eu-west-1\n  stackParameters:\n    - { ParameterKey: ShopVpcId, ParameterValue: vpc-0123456789abcdef0 }\n",
      ) +
        '\nresources:\n  Parameters:\n    ShopVpcId: { Type: String }\n  Resources:\n    Queue: { Type: AWS::SQS::Queue, Properties: { QueueName: !Ref ShopVpcId } }\n',
    );
    dirs.push(dir);

    // Act
    const packaged = await serverless(dir, ['package']);
    const deploy = deployer(join(dir, '.serverless'));
    const core = JSON.parse(readFileSync(join(dir, '.serverless', 'cloudformation-template-create-stack.json'), 'utf8')) as Template;
    const compiled = JSON.parse(readFileSync(join(dir, '.serverless', 'cloudformation-template-update-stack.json'), 'utf8')) as Template;

    // Assess: osls would send ShopVpcId with the create (refused); the update alone is fine; the plugin says so.
    expect(packaged.code).toBe(0);
    expect(mismatch(deploy.create('changesets'), core)).toEqual({ undeclared: ['ShopVpcId'], missing: [] });
    expect(mismatch(deploy.update('changesets'), compiled)).toEqual({ undeclared: [], missing: [] });
    expect(packaged.output).toMatch(/provider\.stackParameters \(ShopVpcId\).*first deploy/s);
  });
});
