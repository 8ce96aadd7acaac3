/**
 * The README's service as `serverless package --stage prod` builds it in a user's project (the consumer-path test):
 * every function that reaches the cluster or Redis in the VPC, every grant its code needs (the deploy rehearsal), and
 * the same service without `provider.vpc` refused, naming the fix.
 */
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cfnGraph, rehearse, type Template } from './deploy-rehearsal';

/**
 * What the README's "Deploy" says the user's VPC must reach besides the brokers and Redis: Lambda and STS, for the
 * trigger's pollers, and Lambda for the retry function's checkpoints (an endpoint of the VPC's own, or a NAT gateway).
 */
export const README_REACH: readonly string[] = ['lambda', 'sts'];

function run(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile('npx', args, { cwd, env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, output: `${stdout}${stderr}` });
    });
  });
}

/**
 * Checks the packaged README service in `project` (its `.serverless/` already built), then packages it again without
 * its `vpc` block; throws naming what is wrong. `env`: the environment the package command ran in (no AWS credentials).
 */
export async function checkReadmeDeploy(project: string, env: NodeJS.ProcessEnv): Promise<{ functions: number; inVpc: number }> {
  const file = join(project, '.serverless', 'cloudformation-template-update-stack.json');
  const template = JSON.parse(readFileSync(file, 'utf8')) as Template;
  const functions = Object.entries(template.Resources).filter(([, resource]) => resource.Type === 'AWS::Lambda::Function');
  // Every function in the VPC but the topics resource's provider, which answers CloudFormation from outside it.
  const outside = functions.filter(([, resource]) => resource.Properties?.['VpcConfig'] === undefined).map(([id]) => id);
  if (outside.join() !== 'OrdersTopicsLambdaFunction') throw new Error(`expected every function but the topics provider in the VPC, outside: ${outside.join(', ')}`);
  const handler = readFileSync(join(project, 'src', 'orders.ts'), 'utf8');
  const sends = [...handler.matchAll(/ctx\.send\(\s*['"]([^'"]+)['"]/g)].map((match) => match[1]!);
  const { problems } = rehearse(template, await cfnGraph(file), { declaredReach: README_REACH, sends: { OrdersLambdaFunction: sends } });
  if (problems.length > 0) throw new Error(`the README's service, packaged: ${problems.join('; ')}`);

  // Without `vpc`: refused at package time, naming the fix.
  const yml = readFileSync(join(project, 'serverless.yml'), 'utf8');
  const withoutVpc = yml.replace(/^ {2}vpc:.*\n(?: {4}.*\n)+/m, '');
  if (withoutVpc === yml) throw new Error("README.md's serverless.yml: no `vpc:` block under `provider:` to take out");
  const config = 'serverless-without-vpc.yml';
  writeFileSync(join(project, config), withoutVpc);
  try {
    const refused = await run(['serverless', 'package', '--stage', 'prod', '--config', config, '--package', '.serverless-without-vpc'], project, env);
    if (refused.code === 0 || !refused.output.includes('expected a VPC for a function whose brokers or Redis are private') || !refused.output.includes('`provider.vpc`')) {
      throw new Error(`the README's service without \`vpc\`: expected \`serverless package\` to refuse it naming \`provider.vpc\`, got exit ${refused.code}:\n${refused.output.slice(-3_000)}`);
    }
  } finally {
    rmSync(join(project, config), { force: true });
    rmSync(join(project, '.serverless-without-vpc'), { recursive: true, force: true });
  }
  return { functions: functions.length, inVpc: functions.length - outside.length };
}
