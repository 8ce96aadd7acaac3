/**
 * What `testLanes` reads of the service's serverless.yml: the `kafkaLanes` block of the function whose group the test
 * runs, turned into the environment the plugin gives that function (its group, retry tiers, dead-letter policy,
 * ordering and declared outputs), so that a test runs the handler as it is deployed and a `ctx.send` to a topic not
 * in `kafkaLanes.outputs` fails there as it does on AWS.
 *
 * The file is read as YAML (JSON is YAML too); CloudFormation tags (`!Ref`, `!Sub`...) are read as plain values. The
 * framework's variables (`${param:...}`, `${self:...}`) are not resolved: a block whose group is one cannot be told
 * apart and is not matched, and a setting of the matched block that is one must be given by the test instead.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { ConfigError } from '../errors';
import { DEFAULTS, ENV } from '../options/constants';

/** The file names the Serverless Framework reads a service from, in its order, that are data (not code). */
export const SERVICE_FILES = ['serverless.yml', 'serverless.yaml', 'serverless.json'] as const;

/** One function's `kafkaLanes` block, with the group the plugin derives for it. */
export interface ServiceBlock {
  readonly functionKey: string;
  /** The group as the plugin derives it; `undefined` when it is a variable the test cannot resolve. */
  readonly group: string | undefined;
  /** The group as written (a variable shows as written). */
  readonly written: string;
  readonly block: Readonly<Record<string, unknown>>;
}

export interface ServiceFile {
  readonly path: string;
  readonly blocks: readonly ServiceBlock[];
}

/** What the service file says for the test's group: the plugin's environment, or why there is none. */
export type ServiceDeclaration =
  | { readonly found: true; readonly path: string; readonly functionKey: string; readonly env: Readonly<Record<string, string>> }
  | { readonly found: false; readonly why: string };

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isVariable = (value: unknown): boolean => typeof value === 'string' && value.includes('${');
const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/**
 * The `kafkaLanes` blocks of a parsed service, each with its group as the plugin derives it: the block's `group`,
 * else its trigger's `consumerGroupId`, else the function's deployed name (`name`, or `<service>-<stage>-<function>`,
 * the stage `provider.stage` or `dev`).
 *
 * @example
 * kafkaLanesBlocks({ service: 'shop', functions: { orders: { kafkaLanes: { group: 'orders-svc' } } } });
 * // [{ functionKey: 'orders', group: 'orders-svc', written: 'orders-svc', block: { group: 'orders-svc' } }]
 */
export function kafkaLanesBlocks(service: unknown): ServiceBlock[] {
  if (!isRecord(service) || !isRecord(service['functions'])) return [];
  const name = isRecord(service['service']) ? service['service']['name'] : service['service'];
  const provider = isRecord(service['provider']) ? service['provider'] : {};
  const stage = text(provider['stage']) ?? 'dev';
  const blocks: ServiceBlock[] = [];
  for (const [functionKey, fn] of Object.entries(service['functions'])) {
    if (!isRecord(fn) || !isRecord(fn['kafkaLanes'])) continue;
    const block = fn['kafkaLanes'];
    const triggers = Array.isArray(fn['events']) ? fn['events'].filter(isRecord).map((event) => event['msk'] ?? event['kafka']).filter(isRecord) : [];
    const written = text(block['group']) ?? text(triggers[0]?.['consumerGroupId']) ?? text(fn['name']) ?? `${String(name)}-${stage}-${functionKey}`;
    blocks.push({ functionKey, group: isVariable(written) ? undefined : written, written, block });
  }
  return blocks;
}

/**
 * The environment the plugin gives the function of `block`: group, retry tiers, dead-letter policy, ordering (each the
 * block's, else the plugin's default) and the declared outputs (none when the block lists none: every send fails).
 * A setting the test gives itself (`given`, variable names) is not read, so a variable there is no problem.
 *
 * @throws ConfigError for a setting that is a variable (or not a list where one is expected), naming it and the fix.
 * @example
 * blockEnvironment({ functionKey: 'orders', group: 'orders-svc', written: 'orders-svc', block: { outputs: ['orders-paid'] } }, 'serverless.yml', new Set());
 * // { KAFKA_LANES_GROUP: 'orders-svc', KAFKA_LANES_RETRY_TIERS: '5s,1m,10m', ..., KAFKA_LANES_OUTPUTS: 'orders-paid' }
 */
export function blockEnvironment(found: ServiceBlock, path: string, given: ReadonlySet<string>): Record<string, string> {
  const { block } = found;
  const deadLetter = isRecord(block['deadLetter']) ? block['deadLetter'] : {};
  const settings: ReadonlyArray<[string, string, unknown, 'list' | 'text', string]> = [
    [ENV.retryTiers, 'retryTiers', block['retryTiers'], 'list', DEFAULTS.retry.tiers.join(',')],
    [ENV.deadLetterPolicy, 'deadLetter.policy', deadLetter['policy'], 'text', DEFAULTS.deadLetter.policy],
    [ENV.ordering, 'ordering', block['ordering'], 'text', DEFAULTS.ordering],
    [ENV.outputs, 'outputs', block['outputs'], 'list', ''],
  ];
  const env: Record<string, string> = { [ENV.group]: found.group ?? found.written };
  for (const [variable, setting, value, kind, byDefault] of settings) {
    if (given.has(variable)) continue;
    const where = `${path}: functions.${found.functionKey}.kafkaLanes.${setting}`;
    if (value === undefined || value === null) {
      env[variable] = byDefault;
      continue;
    }
    const listed = kind === 'list' ? (Array.isArray(value) ? value : undefined) : [value];
    if (listed === undefined || listed.some((item) => typeof item !== 'string' || isVariable(item))) {
      throw new ConfigError(
        `${where}: expected ${kind === 'list' ? 'a list of names' : 'a name'} written out, got \`${JSON.stringify(value)}\`, ` +
          `which testLanes does not resolve: give it to testLanes (${variable === ENV.outputs ? '`outputs`' : `\`env: { ${variable} }\``}), or \`service: false\``,
      );
    }
    env[variable] = (listed as string[]).join(',');
  }
  return env;
}

/**
 * Reads the service file: `given` (a path), else the first of `SERVICE_FILES` in `dir`; `undefined` when there is none
 * (or `given` is `false`).
 *
 * @throws ConfigError when `given` names no file, or the file is not YAML.
 */
export function readServiceFile(given: string | false | undefined, dir: string = process.cwd()): ServiceFile | undefined {
  if (given === false) return undefined;
  const path = given === undefined ? SERVICE_FILES.map((name) => resolve(dir, name)).find((candidate) => existsSync(candidate)) : resolve(dir, given);
  if (path === undefined) return undefined;
  if (!existsSync(path)) throw new ConfigError(`Expected \`service\` to name the service's serverless.yml, got \`${String(given)}\`: no file at ${path}`);
  const document = parseDocument(readFileSync(path, 'utf8'));
  if (document.errors.length > 0) throw new ConfigError(`Expected ${path} to be YAML, got: ${document.errors[0]!.message}`);
  return { path, blocks: kafkaLanesBlocks(document.toJS()) };
}

/**
 * The service's declaration for the test's group: the block of that group (`group`, else the handler's own), or the
 * only block when neither names one; the plugin's environment for it, or why none applies.
 *
 * @example
 * declarationFor(readServiceFile(undefined), 'orders-svc', new Set());
 * // { found: true, path: '/…/serverless.yml', functionKey: 'orders', env: { KAFKA_LANES_GROUP: 'orders-svc', ... } }
 */
export function declarationFor(file: ServiceFile | undefined, group: string | undefined, given: ReadonlySet<string>): ServiceDeclaration {
  if (file === undefined) return { found: false, why: `no ${SERVICE_FILES.join(', ')} in ${process.cwd()} (\`service\` names another)` };
  // Without a group, the only block, when its group is known: a variable would give the handler a group it cannot have.
  const only = file.blocks.length === 1 && file.blocks[0]!.group !== undefined ? file.blocks[0] : undefined;
  const block = group === undefined ? only : file.blocks.find((candidate) => candidate.group === group);
  if (block !== undefined) return { found: true, path: file.path, functionKey: block.functionKey, env: blockEnvironment(block, file.path, given) };
  const groups = file.blocks.map((candidate) => `\`${candidate.written}\``).join(', ');
  const wanted = group === undefined ? 'no group given and not exactly one' : `no \`kafkaLanes\` block of group \`${group}\``;
  return { found: false, why: `${wanted} in ${file.path} (${groups === '' ? 'it has none' : `its groups: ${groups}`})` };
}

/**
 * The declaration of a test: the service file `service` names (or finds in the working directory), for the group the
 * test gives, else the handler's own.
 *
 * @example
 * testDeclaration({ group: 'orders-svc' }, () => undefined, new Set()); // the README's test: its serverless.yml's block
 */
export function testDeclaration(
  test: { readonly service?: string | false; readonly group?: string },
  ownGroup: () => string | undefined,
  given: ReadonlySet<string>,
): ServiceDeclaration {
  if (test.service === false) return { found: false, why: '`service: false`' };
  return declarationFor(readServiceFile(test.service), test.group ?? ownGroup(), given);
}
