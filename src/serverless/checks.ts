import { ENV } from '../options/constants';
import { durationMs } from '../options/duration';
import type { FunctionPlan } from './types';
import { DOCS } from './config';

// Checks `serverless package` makes so that what AWS would refuse at deploy time, or what every cold start
// would refuse, fails before anything is uploaded, naming the setting, the limit and the value. Pure.

/**
 * Retry tiers must ascend strictly: `tierFor` needs one answer, and one delay must not have two topics
 * (`60s` and `1m`). The handler's options refuse the same list at every cold start.
 *
 * @example
 * tierOrderProblems('functions.orders.kafkaLanes.retryTiers', ['30s', '5s']);
 * // ['functions.orders.kafkaLanes.retryTiers.1: expected a longer delay than the tier before it, `30s` (tiers ascend strictly), got `5s`']
 */
export function tierOrderProblems(where: string, tiers: readonly string[]): string[] {
  const problems: string[] = [];
  let previous: { tier: string; ms: number } | undefined;
  tiers.forEach((tier, index) => {
    const ms = durationMs(tier);
    if (ms === undefined) return;
    if (previous !== undefined && ms <= previous.ms) {
      problems.push(`${where}.${index}: expected a longer delay than the tier before it, \`${previous.tier}\` (tiers ascend strictly), got \`${tier}\``);
    }
    if (previous === undefined || ms > previous.ms) previous = { tier, ms };
  });
  return problems;
}

const RATE_UNITS = ['minute', 'hour', 'day'];

/**
 * Why EventBridge would refuse a schedule expression, or `undefined`. `rate(1 minute)` is singular and
 * `rate(5 minutes)` plural; a cron expression has six fields, exactly one of day-of-month and day-of-week `?`.
 *
 * @example
 * scheduleProblem('rate(1 minutes)'); // 'expected `rate(1 minute)` (a value of 1 takes the singular unit), got `rate(1 minutes)`'
 */
export function scheduleProblem(expression: string): string | undefined {
  const rate = /^rate\((.*)\)$/.exec(expression);
  if (rate !== null) {
    const match = /^([1-9][0-9]*) ([a-z]+)$/.exec(rate[1]!.trim());
    const value = match === null ? undefined : Number(match[1]);
    const unit = match?.[2];
    const singular = unit?.replace(/s$/, '');
    if (value === undefined || singular === undefined || !RATE_UNITS.includes(singular)) {
      return `expected \`rate(<positive integer> <minute(s) | hour(s) | day(s)>)\`, got \`${expression}\``;
    }
    if (value === 1 && unit !== singular) return `expected \`rate(1 ${singular})\` (a value of 1 takes the singular unit), got \`${expression}\``;
    if (value > 1 && unit === singular) return `expected \`rate(${value} ${singular}s)\` (a value above 1 takes the plural unit), got \`${expression}\``;
    return undefined;
  }
  const cron = /^cron\((.*)\)$/.exec(expression);
  if (cron !== null) {
    const fields = cron[1]!.trim().split(/\s+/);
    if (fields.length !== 6 || !fields.every((field) => /^[0-9A-Za-z*?,/#-]+$/.test(field))) {
      return `expected \`cron(<minutes> <hours> <day-of-month> <month> <day-of-week> <year>)\`, six fields, got \`${expression}\``;
    }
    if ((fields[2] === '?') === (fields[4] === '?')) {
      return `expected exactly one of day-of-month and day-of-week to be \`?\` (EventBridge cron), got \`${expression}\``;
    }
    return undefined;
  }
  return `expected \`rate(...)\` or \`cron(...)\`, got \`${expression}\``;
}

/** Host names that mean "this machine" or an example: a deployed function reaching one would time out or fail. */
export function localOrPlaceholderHost(host: string): string | undefined {
  const name = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (name === 'localhost' || name.endsWith('.localhost') || /^127\./.test(name) || name === '::1' || name === '0.0.0.0') return 'a loopback address';
  if (/(^|\.)example(\.(com|net|org))?$/.test(name) || /\.(invalid|test)$/.test(name)) return 'a placeholder (reserved example) name';
  return undefined;
}

/** The host of a `host:port` entry or a `redis[s]://` URL; `undefined` for anything else (a CloudFormation value). */
export function hostOf(endpoint: unknown): string | undefined {
  if (typeof endpoint !== 'string') return undefined;
  if (/^rediss?:\/\//.test(endpoint)) {
    try {
      return new URL(endpoint).hostname;
    } catch {
      return undefined;
    }
  }
  const match = /^(\[[^\]]+\]|[^:]+):[0-9]+$/.exec(endpoint);
  return match?.[1];
}

/**
 * Loopback or placeholder endpoints among the settings given, each named; for every command but `offline`
 * (where the local stack is what the functions should reach).
 *
 * @example
 * endpointProblems([{ setting: 'functions.orders.kafkaLanes.redis.url', value: 'redis://127.0.0.1:6379' }]);
 * // ['functions.orders.kafkaLanes.redis.url: expected an address a deployed function can reach, got `redis://127.0.0.1:6379` (a loopback address) ...']
 */
export function endpointProblems(settings: ReadonlyArray<{ setting: string; value: unknown }>): string[] {
  const problems: string[] = [];
  for (const { setting, value } of settings) {
    const host = hostOf(value);
    const kind = host === undefined ? undefined : localOrPlaceholderHost(host);
    if (kind !== undefined) {
      problems.push(
        `${setting}: expected an address a deployed function can reach, got \`${String(value)}\` (${kind}); ` +
          'the local stack is for `serverless offline` (custom.kafkaLanes.offline)',
      );
    }
  }
  return problems;
}

const ARN_REGION = /^arn:[^:]+:kafka:([^:]*):/;

/**
 * An MSK trigger's cluster in another region than the service: Lambda's event source mapping reads only a
 * cluster of its own region.
 */
export function clusterRegionProblem(setting: string, arn: unknown, region: string | undefined): string | undefined {
  if (typeof arn !== 'string' || region === undefined) return undefined;
  const clusterRegion = ARN_REGION.exec(arn)?.[1];
  if (clusterRegion === undefined || clusterRegion === region) return undefined;
  return `${setting}: expected an MSK cluster in the service's region \`${region}\` (an event source mapping reads only its own region), got \`${arn}\` (region \`${clusterRegion}\`)`;
}

/**
 * Strings over a limit, each named with the limit and the value.
 *
 * @example
 * lengthProblem('functions.ordersCommitter.name', 'x'.repeat(70), 64, 'Lambda function names');
 */
export function lengthProblem(setting: string, value: string, limit: number, what: string): string | undefined {
  if (value.length <= limit) return undefined;
  return `${setting}: expected at most ${limit} characters (${what}), got ${value.length}: \`${value}\``;
}

/** The hosts a setting's text names: URLs (`scheme://host...`), `host:port` entries and bare host names, in any list. */
function hostsIn(text: string): string[] {
  const hosts: string[] = [];
  for (const token of text.split(/[\s,;]+/).filter((part) => part !== '')) {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(token)) {
      try {
        hosts.push(new URL(token).hostname);
      } catch {
        // Not a URL after all: nothing to check.
      }
      continue;
    }
    const hostPort = /^(\[[^\]]+\]|[^:/]+):[0-9]+$/.exec(token);
    hosts.push(hostPort === null ? token : hostPort[1]!);
  }
  return hosts;
}

/**
 * Environment variables of a deployed function whose value names a loopback address (a URL, a `host:port` list
 * or a bare host), each named by the setting that gives it: outside `serverless offline` nothing listens there,
 * so the function would fail or wait at its first call. Values known only at deploy time (CloudFormation
 * functions) are not strings and pass.
 *
 * @example
 * loopbackEnvironmentProblems('functions.orders.environment', { DEMO_RESULTS_REDIS_URL: 'redis://127.0.0.1:6379', DEMO_LATENCY_MS: '20' });
 * // ['functions.orders.environment.DEMO_RESULTS_REDIS_URL: expected an address a deployed function can reach, got `redis://127.0.0.1:6379` (a loopback address) ...']
 */
export function loopbackEnvironmentProblems(where: string, environment: Readonly<Record<string, unknown>> | undefined): string[] {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(environment ?? {})) {
    if (typeof value !== 'string') continue;
    const loopback = hostsIn(value).some((host) => localOrPlaceholderHost(host) === 'a loopback address');
    if (loopback) {
      problems.push(
        `${where}.${name}: expected an address a deployed function can reach, got \`${value}\` (a loopback address); ` +
          'the local stack is for `serverless offline` (custom.kafkaLanes.offline), where the functions get its addresses',
      );
    }
  }
  return problems;
}

/**
 * The regions where MSK Serverless is offered, as AWS's MSK developer guide lists them ("What is MSK Serverless?",
 * `/msk/latest/developerguide/serverless.html`, at the time of writing). A region AWS adds later is missing here:
 * the check warns, it does not refuse.
 */
export const MSK_SERVERLESS_REGIONS: readonly string[] = [
  'us-east-1', 'us-east-2', 'us-west-2', 'ca-central-1',
  'ap-south-1', 'ap-southeast-1', 'ap-southeast-2', 'ap-northeast-1', 'ap-northeast-2',
  'eu-central-1', 'eu-north-1', 'eu-west-1', 'eu-west-2', 'eu-west-3',
];

/**
 * A warning when the stack creates an MSK Serverless cluster (`AWS::MSK::ServerlessCluster`) in a region the list
 * above does not name, else `undefined`.
 *
 * @example
 * mskServerlessRegionWarning('sa-east-1', { KafkaLanesMsk: { Type: 'AWS::MSK::ServerlessCluster' } });
 * // 'resources.KafkaLanesMsk: MSK Serverless is not offered in `sa-east-1` according to ...'
 */
export function mskServerlessRegionWarning(region: string | undefined, resources: Readonly<Record<string, { Type?: unknown }>>): string | undefined {
  if (region === undefined || MSK_SERVERLESS_REGIONS.includes(region)) return undefined;
  const clusters = Object.entries(resources).filter(([, resource]) => resource.Type === 'AWS::MSK::ServerlessCluster').map(([id]) => id);
  if (clusters.length === 0) return undefined;
  return (
    `resources.${clusters.join(', resources.')}: MSK Serverless is not offered in \`${region}\` according to AWS's MSK developer guide ` +
    `("What is MSK Serverless?", which names ${MSK_SERVERLESS_REGIONS.join(', ')}): CloudFormation would fail to create the cluster. ` +
    'Deploy to one of those regions, or use a provisioned cluster (the example: --param msk=provisioned)'
  );
}

/** Hosts only a VPC reaches: ElastiCache and MSK names, private IPv4 ranges (RFC 1918). */
const PRIVATE_HOST = [
  { pattern: /\.cache\.amazonaws\.com(\.cn)?$/i, what: 'an ElastiCache endpoint (ElastiCache is reached from its VPC only)' },
  { pattern: /\.kafka(-serverless)?\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/i, what: "an MSK broker (MSK's brokers have private addresses)" },
  { pattern: /^(10\.|192\.168\.|172\.(1[6-9]|2[0-9]|3[01])\.)[0-9.]+$/, what: 'a private address (RFC 1918)' },
];

/** Why a value (a `host:port` list, a URL) is reached from a VPC only; `undefined` when it is not known to be. */
export function privateEndpoint(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  for (const host of hostsIn(value)) {
    const match = PRIVATE_HOST.find(({ pattern }) => pattern.test(host.replace(/^\[|\]$/g, '')));
    if (match !== undefined) return match.what;
  }
  return undefined;
}

/**
 * A function of a group with no VPC (neither its own `vpc` nor `provider.vpc`) whose brokers or Redis are private
 * would time out at its first connection: refused, naming each such setting and the fix. An endpoint that is not
 * known to be private or public (a CloudFormation value, a host name of the user's) is a warning.
 *
 * @example
 * vpcProblems('functions.orders', [{ setting: 'functions.orders.events.msk.arn', value: arn, msk: true }]);
 * // { problems: ['functions.orders: expected a VPC (...), got none: functions.orders.events.msk.arn is an MSK cluster ...'], warnings: [] }
 */
export function vpcProblems(
  where: string,
  targets: ReadonlyArray<{ setting: string; value: unknown; msk?: boolean }>,
): { problems: string[]; warnings: string[] } {
  const reasons: string[] = [];
  const unknown: string[] = [];
  for (const { setting, value, msk } of targets) {
    if (msk === true) {
      reasons.push(`${setting} is an MSK cluster (its brokers have private addresses, in the cluster's VPC)`);
      continue;
    }
    const why = privateEndpoint(value);
    if (why !== undefined) reasons.push(`${setting} is ${why}: \`${String(value)}\``);
    else unknown.push(setting);
  }
  const fix =
    'give the functions the VPC that reaches them: `provider.vpc` (or `' + where + '.vpc`) with `subnetIds` (private subnets) and ' +
    '`securityGroupIds` (a group the brokers and Redis admit), as the README\'s serverless.yml does (' + DOCS + '/deploy.md, "Your own service")';
  if (reasons.length > 0) return { problems: [`${where}: expected a VPC for a function whose brokers or Redis are private, got none: ${reasons.join('; ')}; ${fix}`], warnings: [] };
  if (unknown.length > 0) {
    return {
      problems: [],
      warnings: [`${where} is in no VPC: if ${unknown.join(', ')} ${unknown.length === 1 ? 'is' : 'are'} reached from a VPC only, ${fix}`],
    };
  }
  return { problems: [], warnings: [] };
}

/**
 * `vpcProblems` of a planned group whose function has `vpc` (its own, else the provider's): none when it has one; else
 * each of its private targets (the MSK trigger, the brokers, Redis), each named by the setting that gives it.
 */
export function planVpcProblems(plan: FunctionPlan, vpc: unknown): { problems: string[]; warnings: string[] } {
  if (vpc !== undefined && vpc !== null && vpc !== false) return { problems: [], warnings: [] };
  const where = `functions.${plan.functionKey}`;
  const trigger = 'msk' in plan.source ? { kind: 'msk', settings: plan.source.msk } : { kind: 'kafka', settings: plan.source.kafka };
  const redis = [ENV.redisUrl, ENV.redisClusterNodes].filter((name) => plan.environment[name] !== undefined);
  return vpcProblems(where, [
    ...(trigger.kind === 'msk' ? [{ setting: `${where}.events.msk.arn`, value: trigger.settings.arn, msk: true }] : []),
    ...(trigger.kind === 'kafka' ? [{ setting: `${where}.events.kafka.bootstrapServers`, value: (trigger.settings.bootstrapServers ?? []).join(',') }] : []),
    ...(plan.environment[ENV.brokers] === undefined || trigger.kind === 'kafka' ? [] : [{ setting: `${where}.kafkaLanes.kafka.brokers`, value: plan.environment[ENV.brokers] }]),
    ...redis.map((name) => ({ setting: `${where}.kafkaLanes.redis.${name === ENV.redisUrl ? 'url' : 'clusterNodes'}`, value: plan.environment[name] })),
  ]);
}

/**
 * The framework sends `provider.stackParameters` with every stack request, the one that creates a new stack from its
 * core template (the deployment bucket only, no `Parameters`) included: CloudFormation refuses a parameter its
 * template does not declare, so the first deploy of a stage would fail where updates work. A warning naming them.
 */
export function stackParametersWarning(keys: readonly string[]): string | undefined {
  if (keys.length === 0) return undefined;
  return (
    `provider.stackParameters (${keys.join(', ')}) are sent with the request that creates the stack too, whose ` +
    'template (the deployment bucket only) declares no parameter: CloudFormation refuses it, so the first deploy of a ' +
    "stage fails (updates of an existing stack work). Give the values as the parameters' Default under `resources:` " +
    `instead (a \`\${param:...}\` per stage), as the example service does (${DOCS}/deploy.md, "The example stack")`
  );
}

/**
 * The topics a handler's own file sends to with a literal name (`ctx.send('orders-paid', ...)`) that are not declared
 * outputs: each such send fails its record on AWS (MSK IAM refuses the write), under `serverless offline` and in
 * `testLanes`. A warning: a name built at run time, or a send in another file, is not seen here.
 *
 * @example
 * undeclaredSendsWarning('functions.orders', "ctx.send('orders-paid', { value })", []);
 * // 'functions.orders: its handler sends to `orders-paid` (ctx.send), not declared in kafkaLanes.outputs (none): ...'
 */
export function undeclaredSendsWarning(where: string, source: string, outputs: readonly string[]): string | undefined {
  const sent = [...new Set([...source.matchAll(/\.send\(\s*['"`]([A-Za-z0-9._-]+)['"`]\s*,/g)].map((match) => match[1]!))];
  const undeclared = sent.filter((topic) => !outputs.includes(topic));
  if (undeclared.length === 0) return undefined;
  return (
    `${where}: its handler sends to ${undeclared.map((topic) => `\`${topic}\``).join(', ')} (ctx.send), not declared in kafkaLanes.outputs ` +
    `(${outputs.length === 0 ? 'none' : outputs.join(', ')}): every such send fails its record, on AWS (MSK IAM refuses the write), under ` +
    '`serverless offline` and in `testLanes`. Add it to `kafkaLanes.outputs`'
  );
}

/** A resource of the service's own CloudFormation, as far as the plugin reads it. */
export type DeclaredResource = { readonly Type?: unknown; readonly Condition?: unknown; readonly Properties?: Record<string, unknown> };

/** The service's own CloudFormation under `resources:` (one fragment or a list), merged as the framework merges it. */
export function declaredTemplate(declared: unknown): { resources: Record<string, DeclaredResource>; parameters: Record<string, { Default?: unknown }> } {
  const fragments = (Array.isArray(declared) ? declared : [declared]) as Array<{ Resources?: Record<string, DeclaredResource>; Parameters?: Record<string, object> } | undefined>;
  const parameters: Record<string, { Default?: unknown }> = {};
  for (const fragment of fragments) for (const [name, value] of Object.entries(fragment?.Parameters ?? {})) parameters[name] = { ...parameters[name], ...value };
  return { resources: Object.assign({}, ...fragments.map((fragment) => fragment?.Resources ?? {})) as Record<string, DeclaredResource>, parameters };
}

/**
 * infra/aws/network.yml's existing-VPC parameters as the stage gives them (their `Default`, which the example sets from
 * `--param vpcId` and `--param subnetIds`): an existing VPC needs its private subnets, two or more (MSK's brokers and
 * Redis spread over AZs), and subnets without a VPC would be ignored. Checked before anything is uploaded, rather than
 * by CloudFormation half-way through the stack.
 *
 * @example
 * existingVpcProblems({ KafkaLanesVpcId: { Default: 'vpc-0a1b' }, KafkaLanesSubnetIds: { Default: '' } });
 * // ['resources.Parameters.KafkaLanesSubnetIds: expected the private subnets of the existing VPC `vpc-0a1b` ...']
 */
export function existingVpcProblems(parameters: Readonly<Record<string, { Default?: unknown }>>): string[] {
  if (parameters['KafkaLanesVpcId'] === undefined || parameters['KafkaLanesSubnetIds'] === undefined) return [];
  const vpc = String(parameters['KafkaLanesVpcId'].Default ?? '').trim();
  const subnets = String(parameters['KafkaLanesSubnetIds'].Default ?? '').split(',').map((subnet) => subnet.trim()).filter((subnet) => subnet !== '');
  if (vpc === '' && subnets.length > 0) {
    return [`resources.Parameters.KafkaLanesSubnetIds: expected no subnets when the stack creates its VPC (KafkaLanesVpcId empty), got \`${subnets.join(',')}\`: give the VPC too (--param vpcId=vpc-...), or leave the subnets out`];
  }
  if (vpc !== '' && subnets.length < 2) {
    return [
      `resources.Parameters.KafkaLanesSubnetIds: expected two or more private subnets of the existing VPC \`${vpc}\` (in two or more AZs: MSK's brokers and Redis ` +
        `spread over them), got ${subnets.length === 0 ? 'none' : `\`${subnets.join(',')}\``}: --param subnetIds=subnet-a,subnet-b`,
    ];
  }
  return [];
}

/** The example stack's own network settings (infra/aws/network.yml's endpoint switches, given as `--param`). */
const EXAMPLE_NETWORK_PARAMS = ['createEndpoints', 'lambdaEndpoint', 'stsEndpoint', 'secretsManagerEndpoint'] as const;

/**
 * `--param createEndpoints=false` (or another of the example stack's endpoint switches) given to a service that
 * does not include infra/aws/network.yml and declares no such param of its own: it changes nothing there, and the
 * service's own VPC needs none of it. A warning naming what the VPC does need.
 *
 * @example
 * exampleNetworkParamWarning(['createEndpoints=false'], { prod: { subnetIds: '...' } }, {});
 * // '--param createEndpoints: a switch of the example stack's network ... behind a NAT gateway, nothing to set; ...'
 */
export function exampleNetworkParamWarning(
  given: string | readonly string[] | undefined,
  params: Readonly<Record<string, Readonly<Record<string, unknown>> | null>> | undefined,
  templateParameters: Readonly<Record<string, unknown>>,
): string | undefined {
  if ('KafkaLanesCreateEndpoints' in templateParameters) return undefined;
  const names = (typeof given === 'string' ? [given] : (given ?? [])).map((param) => param.split('=')[0]!.trim());
  // A param the service declares itself (`params:` of any stage) is its own, whatever it is called.
  const declared = new Set(Object.values(params ?? {}).flatMap((stage) => Object.keys(stage ?? {})));
  const stray = EXAMPLE_NETWORK_PARAMS.filter((name) => names.includes(name) && !declared.has(name));
  if (stray.length === 0) return undefined;
  return (
    `${stray.map((name) => `--param ${name}`).join(', ')}: a switch of the example stack's network (node_modules/kafka-lanes/infra/aws/network.yml), ` +
    'which this service does not include: it changes nothing here. For your own VPC kafka-lanes needs no setting: behind a NAT ' +
    "gateway, nothing to set; without one, the cluster's VPC needs interface endpoints for Lambda and STS (Lambda's for the retry " +
    `function's checkpoints too; Secrets Manager for a secret) (${DOCS}/deploy.md, "Your own service")`
  );
}

/**
 * `serverless invoke local` refused for the stage's loopback settings (the local stack's Redis or broker): the local way
 * to write records, which the refusal alone does not say.
 *
 * @example
 * invokeLocalHint(['invoke', 'local'], ['functions.orders.kafkaLanes.redis.url: ... (a loopback address) ...']);
 * // ['`serverless invoke local` runs a function with the settings of a deployed one ... `npx kafka-lanes produce` ...']
 */
export function invokeLocalHint(commands: readonly string[], problems: readonly string[]): string[] {
  if (commands[0] !== 'invoke' || commands[1] !== 'local' || !problems.some((problem) => problem.includes('a loopback address'))) return [];
  return [
    '`serverless invoke local` runs a function with the settings of a deployed one, which reach no loopback address. Locally, ' +
      "write records to the local broker with `npx kafka-lanes produce <topic> --key <key> '<value>'` (the `<function>Produce` " +
      'function is for a deployed cluster: `serverless offline` does not add it), and run the functions under `npx serverless offline start`',
  ];
}
