/**
 * Runs the real framework (osls) on services written for a test: `serverless package`, offline and without AWS
 * credentials, and reads the CloudFormation it generates.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve as resolvePath } from 'node:path';
import { withCheckoutLock } from './checkout-lock';

export const ROOT = join(__dirname, '..', '..', '..');
const SERVERLESS = join(ROOT, 'node_modules', '.bin', 'serverless');

export interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
  DependsOn?: unknown;
}

// No credentials of any kind: packaging must not need AWS.
const NO_AWS = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('AWS_')));
const ENV = { ...NO_AWS, AWS_SHARED_CREDENTIALS_FILE: '/nonexistent', AWS_CONFIG_FILE: '/nonexistent', AWS_EC2_METADATA_DISABLED: 'true' };

/**
 * Runs `serverless <args>` in `cwd`; its exit code and everything it printed. In the checkout's root (the example
 * service) it holds the `dist-lambda` lock: a package there rewrites `<root>/dist-lambda/` (support/checkout-lock.ts).
 */
export function serverless(cwd: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; output: string }> {
  const run = (): Promise<{ code: number; output: string }> => new Promise((resolve) => {
    execFile(SERVERLESS, args, { cwd, env: { ...ENV, ...env }, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, output: `${stdout}${stderr}` });
    });
  });
  return resolvePath(cwd) === resolvePath(ROOT) ? withCheckoutLock('dist-lambda', run) : run();
}

/** The resources of the template `serverless package` wrote into `dir`. */
export function template(dir: string): Record<string, Resource> {
  return (JSON.parse(readFileSync(join(dir, 'cloudformation-template-update-stack.json'), 'utf8')) as { Resources: Record<string, Resource> }).Resources;
}

export function ofType(resources: Record<string, Resource>, type: string): Resource[] {
  return Object.values(resources).filter((resource) => resource.Type === type);
}

/**
 * The serverless.yml of a service `shop` (eu-west-1, Node.js 22, the kafka-lanes plugin, in a VPC unless `vpc` is
 * false) whose functions are `functions`: YAML already indented under `functions:`.
 *
 * @example
 * serviceYml('  orders:\n    handler: handler.handler\n'); // 'service: shop\nconfigValidationMode: error\n...'
 */
export function serviceYml(functions: string, validation: 'warn' | 'error' = 'error', vpc = true): string {
  return `service: shop
configValidationMode: ${validation}
provider:
  name: aws
  runtime: nodejs22.x
  region: eu-west-1${vpc ? `
  vpc: # the VPC that reaches the brokers and Redis (a function of a group with private ones is refused without one)
    subnetIds: [subnet-0123456789abcdef0, subnet-0fedcba9876543210]
    securityGroupIds: [sg-0123456789abcdef0]` : ''}
plugins:
  - kafka-lanes/serverless
functions:
${functions}`;
}

/**
 * A service of its own in the checkout (`.sls-tmp/`, not `.local/`, which may be a link to another checkout:
 * `kafka-lanes/serverless` must resolve to this one's plugin).
 */
export function service(yml: string, files: Record<string, string> = {}): string {
  mkdirSync(join(ROOT, '.sls-tmp'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, '.sls-tmp', 'service-'));
  writeFileSync(join(dir, 'serverless.yml'), yml);
  writeFileSync(join(dir, 'handler.ts'), 'export const handler = async (): Promise<{ batchItemFailures: [] }> => ({ batchItemFailures: [] });\n');
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}
