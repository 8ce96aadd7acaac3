/**
 * A deploy rehearsal: what CloudFormation would do with a packaged template, read from the template and the
 * dependency graph cfn-lint draws of it (support/cfn-graph.py: Ref, Fn::GetAtt, Fn::Sub and DependsOn, with where in
 * the resource each was found, `Metadata` included), for one configuration (the parameters' defaults, which
 * `serverless.yml` sets per stage). Conditions are evaluated and an edge found inside `Fn::If` holds only on the branch
 * its condition takes.
 *
 * It proves, mechanically, what a reader otherwise finds by hand (the checks: support/rehearsal-checks.ts):
 * - order: everything a custom resource needs to do its work and to answer (its provider, the worker it invokes,
 *   their roles, and for a function in a VPC the endpoints and routes of each AWS API it calls) is in the resource's
 *   dependency closure, so CloudFormation creates it before the resource and deletes it after (create and delete
 *   order follow the graph: a resource is created after all it depends on, deleted before any of them); every trigger
 *   comes after its group's topics, and after the stack's endpoints its pollers use; every function in a VPC after the
 *   stack's endpoints of the APIs it calls;
 * - reach: the topics resource's provider is outside any VPC; every function that reaches a private address (the
 *   stack's MSK or ElastiCache, a private host, the cluster its topics worker creates topics on) sits in a VPC, from
 *   there reaches each AWS API it calls (docs/deploy.md's API table: `API_CALLS` below) through an endpoint of the
 *   template or a reach the configuration declares (a NAT gateway or endpoints of the VPC's own), and is admitted by the
 *   security groups of the stack's cluster and Redis on their ports;
 * - grants: with MSK IAM, every topic a handler reads or writes (its triggers, retry tiers, dead letters, declared
 *   outputs, and what its code sends) is granted to its role, and its code sends only to declared outputs; the topics
 *   worker may create every topic of its resource, and the provider may invoke its worker;
 * - the retry function: each retry tier's trigger invokes a durable function (`DurableConfig`, at most the 15 minutes an
 *   event source mapping waits) through a qualified ARN, whose role may checkpoint its own executions.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { REHEARSAL_CHECKS, customResourceNeeds } from './rehearsal-checks';

export interface TemplateResource {
  readonly Type: string;
  readonly Condition?: string;
  readonly Properties?: Record<string, unknown>;
  readonly DependsOn?: string | string[];
  readonly Metadata?: Record<string, unknown>;
}
export interface Template {
  readonly Parameters?: Record<string, { Type?: string; Default?: unknown }>;
  readonly Conditions?: Record<string, unknown>;
  readonly Resources: Record<string, TemplateResource>;
}
export interface Edge {
  readonly from: string;
  readonly to: string;
  readonly label: string;
  readonly path: ReadonlyArray<string | number>;
}

/** cfn-lint's dependency graph of a template file, through the Python that runs cfn-lint. */
export function cfnGraph(file: string): Promise<Edge[]> {
  const script = join(__dirname, 'cfn-graph.py');
  const attempt = (python: string): Promise<Edge[]> =>
    new Promise((resolve, reject) => {
      execFile(python, [script, file], { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
        if (error !== null) reject(new Error(`${python} ${script} failed (cfn-lint must be importable: \`pip install cfn-lint\`): ${stderr || error.message}`));
        else resolve((JSON.parse(stdout) as { edges: Edge[] }).edges);
      });
    });
  return attempt('python3').catch(() => attempt('python'));
}

/** The AWS APIs a function's code calls, by what the plugin puts in its environment (docs/deploy.md, the API table). */
export const API_CALLS: ReadonlyArray<{ readonly variable: string; readonly service: (value: unknown) => string; readonly what: string }> = [
  { variable: 'KAFKA_LANES_REDIS_AUTH_SECRET', service: (value) => (String(value).startsWith('ssm:') ? 'ssm' : 'secretsmanager'), what: 'the Redis AUTH token' },
  { variable: 'KAFKA_LANES_SASL_SECRET', service: () => 'secretsmanager', what: 'the SCRAM secret' },
  { variable: 'KAFKA_LANES_MSK_CLUSTER_ARN', service: () => 'kafka', what: 'GetBootstrapBrokers' },
  { variable: 'KAFKA_LANES_TOPICS_WORKER', service: () => 'lambda', what: 'the invocation of the topics worker' },
  { variable: 'KAFKA_LANES_RETRY_EXECUTION_TIMEOUT', service: () => 'lambda', what: "its durable executions' checkpoints" },
];

export interface RehearsalOptions {
  /** AWS services the configuration's VPC reaches by itself (`*`: a NAT gateway), declared by the user. */
  readonly declaredReach?: readonly string[];
  /** Topics each handler's code sends to (`ctx.send`), by the function's logical ID. */
  readonly sends?: Readonly<Record<string, readonly string[]>>;
}

export interface Rehearsal {
  readonly problems: string[];
  /** Resources in an order CloudFormation may create them (each after all it depends on); deletion is the reverse. */
  readonly createOrder: string[];
  /** What each custom resource needs, with the reason, all found in its dependency closure when there is no problem. */
  readonly needs: Record<string, Record<string, string>>;
}

/** An IAM statement of a role, as the template writes it. */
export interface RoleStatement {
  readonly Action: string[];
  readonly Resource: unknown;
}

/** One configuration of a template, read: what every check asks of it. */
export interface Scene {
  readonly resources: Record<string, TemplateResource>;
  readonly options: RehearsalOptions;
  /** A value as CloudFormation would resolve it here; stack resources by stand-ins that keep their kind visible. */
  evaluate(value: unknown): unknown;
  /** The resource is in the template and its condition holds. */
  exists(id: string): boolean;
  /** The resources of a type that exist in this configuration. */
  ofType(type: string): string[];
  properties(id: string): Record<string, unknown>;
  environment(id: string): Record<string, unknown>;
  inVpc(id: string): boolean;
  /** The logical ID of a function's role (`Role: Fn::GetAtt [<role>, Arn]`), when the template holds it. */
  roleOf(id: string): string | undefined;
  statementsOf(role: string | undefined): RoleStatement[];
  /** The role grants `action` on `arn` (an ARN as this rehearsal resolves it; `*` in a granted ARN matches anything). */
  granted(role: string | undefined, action: string, arn: string): boolean;
  /** Everything `id` depends on, directly or not, in this configuration. */
  closure(id: string): Set<string>;
  /** The event source mappings that invoke a function (its own ARN or a qualified one). */
  triggersOf(fn: string): string[];
  /** The stack's interface endpoints that exist here, by the AWS service each reaches. */
  endpointOf(service: string): string | undefined;
  /** The configuration reaches `service` from its VPC by itself (declared: a NAT gateway or endpoints of its own). */
  declaresReach(service: string): boolean;
  /** What a function in a VPC needs to reach `service`: an endpoint of the template (with its routes), else a declared reach. */
  reachOf(fn: string, service: string, what: string): Record<string, string> | string;
  apisOf(fn: string): Array<{ service: string; what: string }>;
}

const PSEUDO: Record<string, string> = {
  'AWS::Region': 'eu-west-1',
  'AWS::AccountId': '123456789012',
  'AWS::Partition': 'aws',
  'AWS::StackName': 'stack',
  'AWS::StackId': 'arn:aws:cloudformation:eu-west-1:123456789012:stack/stack/0',
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::NoValue': '',
};

/** Rehearses one configuration of a packaged template with cfn-lint's graph of it. */
export function rehearse(template: Template, edges: readonly Edge[], options: RehearsalOptions = {}): Rehearsal {
  const { scene, createOrder, cycle } = read(template, edges, options);
  const { problems, needs } = customResourceNeeds(scene);
  if (cycle.length > 0) problems.unshift(`CloudFormation refuses the template: a circular dependency among ${cycle.join(', ')}`);
  for (const check of REHEARSAL_CHECKS) problems.push(...check(scene));
  return { problems: [...new Set(problems)], createOrder, needs };
}

function read(template: Template, edges: readonly Edge[], options: RehearsalOptions): { scene: Scene; createOrder: string[]; cycle: string[] } {
  const resources = template.Resources;
  const parameters = Object.fromEntries(
    Object.entries(template.Parameters ?? {}).map(([name, parameter]) => [
      name,
      parameter.Type === 'CommaDelimitedList' ? String(parameter.Default ?? '').split(',').filter((item) => item !== '') : parameter.Default,
    ]),
  );
  const conditions = new Map<string, boolean>();
  const condition = (name: string): boolean => {
    if (!conditions.has(name)) {
      const definition = template.Conditions?.[name];
      if (definition === undefined) throw new Error(`condition ${name} is not declared`);
      conditions.set(name, Boolean(evaluate(definition)));
    }
    return conditions.get(name)!;
  };
  const exists = (id: string): boolean => resources[id] !== undefined && (resources[id]!.Condition === undefined || condition(resources[id]!.Condition!));

  function evaluate(value: unknown): unknown {
    if (Array.isArray(value)) return value.map(evaluate);
    if (typeof value !== 'object' || value === null) return value;
    const entries = Object.entries(value);
    const [name, args] = entries[0] ?? [];
    if (entries.length !== 1 || name === undefined) return Object.fromEntries(entries.map(([key, inner]) => [key, evaluate(inner)]));
    const list = args as unknown[];
    switch (name) {
      case 'Ref': {
        const id = String(args);
        if (id in PSEUDO) return PSEUDO[id];
        if (id in parameters) return parameters[id];
        const resource = resources[id];
        if (resource?.Type.startsWith('AWS::MSK::') === true) return `arn:aws:kafka:eu-west-1:123456789012:cluster/${id}/0000-1`;
        if (resource?.Type === 'AWS::Lambda::Function') return String(resource.Properties?.['FunctionName'] ?? id);
        return `<${id}>`;
      }
      case 'Fn::GetAtt': {
        const [id, attribute] = Array.isArray(args) ? args : String(args).split('.');
        return `<${String(id)}.${String(attribute)}>`;
      }
      case 'Fn::Sub': {
        const [text, variables] = Array.isArray(args) ? [String(args[0]), (args[1] ?? {}) as Record<string, unknown>] : [String(args), {}];
        return text.replace(/\$\{([^}!]+)\}/g, (_match, variable: string) =>
          variable in variables ? String(evaluate(variables[variable])) : variable.includes('.') ? `<${variable}>` : String(evaluate({ Ref: variable })),
        );
      }
      case 'Fn::Join':
        return (evaluate(list[1]) as unknown[]).map(String).join(String(list[0]));
      case 'Fn::Split':
        return String(evaluate(list[1])).split(String(list[0]));
      case 'Fn::Select':
        return (evaluate(list[1]) as unknown[])[Number(evaluate(list[0]))];
      case 'Fn::If':
        return condition(String(list[0])) ? evaluate(list[1]) : evaluate(list[2]);
      case 'Fn::Equals':
        return JSON.stringify(evaluate(list[0])) === JSON.stringify(evaluate(list[1]));
      case 'Fn::And':
        return list.every((item) => Boolean(evaluate(item)));
      case 'Fn::Or':
        return list.some((item) => Boolean(evaluate(item)));
      case 'Fn::Not':
        return !evaluate(list[0]);
      case 'Condition':
        return condition(String(args));
      case 'Fn::ImportValue':
        return `arn:aws:kafka:eu-west-1:123456789012:cluster/imported-${String(evaluate(args))}/0000-1`;
      case 'Fn::GetAZs':
        return ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'];
      case 'Fn::Cidr':
        return ['10.0.0.0/20', '10.0.16.0/20'];
      default:
        return Object.fromEntries(entries.map(([key, inner]) => [key, evaluate(inner)]));
    }
  }

  /** An edge found inside `Fn::If` holds only on the branch its condition takes. */
  const holds = (edge: Edge): boolean => {
    if (!exists(edge.from) || !exists(edge.to)) return false;
    let node: unknown = resources[edge.from];
    for (let i = 0; i < edge.path.length; i++) {
      const key = edge.path[i]!;
      if (key === 'Fn::If') {
        const [name] = (node as Record<string, unknown[]>)['Fn::If']!;
        const branch = edge.path[i + 1];
        if ((branch === 1 && !condition(String(name))) || (branch === 2 && condition(String(name)))) return false;
      }
      node = (node as Record<string | number, unknown>)[key];
    }
    return true;
  };
  const dependsOn = new Map<string, Set<string>>();
  for (const id of Object.keys(resources).filter(exists)) dependsOn.set(id, new Set());
  for (const edge of edges.filter(holds)) dependsOn.get(edge.from)!.add(edge.to);
  const closure = (id: string): Set<string> => {
    const seen = new Set<string>();
    const stack = [...(dependsOn.get(id) ?? [])];
    while (stack.length > 0) {
      const next = stack.pop()!;
      if (seen.has(next)) continue;
      seen.add(next);
      stack.push(...(dependsOn.get(next) ?? []));
    }
    return seen;
  };
  const createOrder: string[] = [];
  const placed = new Set<string>();
  let cycle: string[] = [];
  while (placed.size < dependsOn.size) {
    const ready = [...dependsOn].filter(([id, after]) => !placed.has(id) && [...after].every((dependency) => placed.has(dependency))).map(([id]) => id);
    if (ready.length === 0) {
      cycle = [...dependsOn.keys()].filter((id) => !placed.has(id));
      break;
    }
    for (const id of ready.sort()) {
      placed.add(id);
      createOrder.push(id);
    }
  }

  const properties = (id: string): Record<string, unknown> => resources[id]?.Properties ?? {};
  const ofType = (type: string): string[] => Object.keys(resources).filter((id) => exists(id) && resources[id]!.Type === type);
  const endpoints = ofType('AWS::EC2::VPCEndpoint');
  const endpointOf = (service: string): string | undefined => endpoints.find((id) => String(evaluate(properties(id)['ServiceName'])).endsWith(`.${service}`));
  const declared = new Set(options.declaredReach ?? []);
  const declaresReach = (service: string): boolean => declared.has(service) || declared.has('*');
  const statementsOf = (role: string | undefined): RoleStatement[] =>
    role === undefined ? [] : ((properties(role)['Policies'] as Array<{ PolicyDocument: { Statement: RoleStatement[] } }> | undefined) ?? []).flatMap((policy) => policy.PolicyDocument.Statement);
  const scene: Scene = {
    resources,
    options,
    evaluate,
    exists,
    ofType,
    properties,
    environment: (id) => ((properties(id)['Environment'] as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {}),
    inVpc: (id) => {
      const vpc = evaluate(properties(id)['VpcConfig']) as { SubnetIds?: unknown[] } | undefined;
      return Array.isArray(vpc?.SubnetIds) && vpc.SubnetIds.some((subnet) => subnet !== '');
    },
    roleOf: (id) => {
      const role = (properties(id)['Role'] as { 'Fn::GetAtt'?: unknown[] } | undefined)?.['Fn::GetAtt']?.[0];
      return typeof role === 'string' && resources[role] !== undefined ? role : undefined;
    },
    statementsOf,
    granted: (role, action, arn) =>
      statementsOf(role).some((statement) => {
        if (!statement.Action.includes(action)) return false;
        const listed = evaluate(statement.Resource);
        return (Array.isArray(listed) ? listed : [listed]).some((resource) => new RegExp(`^${String(resource).split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`).test(arn));
      }),
    closure,
    triggersOf: (fn) => ofType('AWS::Lambda::EventSourceMapping').filter((id) => JSON.stringify(properties(id)['FunctionName']).includes(`"${fn}"`)),
    endpointOf,
    declaresReach,
    reachOf: (fn, service, what) => {
      const endpoint = endpointOf(service);
      if (endpoint !== undefined) {
        const needs: Record<string, string> = { [endpoint]: `${fn} reaches ${service} (${what}) through it` };
        if (properties(endpoint)['VpcEndpointType'] === 'Gateway') {
          const tables = new Set((evaluate(properties(endpoint)['RouteTableIds']) as unknown[]).map(String));
          const subnets = new Set(((evaluate(properties(fn)['VpcConfig']) as { SubnetIds: unknown[] }).SubnetIds ?? []).map(String));
          for (const id of ofType('AWS::EC2::SubnetRouteTableAssociation')) {
            if (tables.has(String(evaluate(properties(id)['RouteTableId']))) && subnets.has(String(evaluate(properties(id)['SubnetId'])))) {
              needs[id] = `the route of ${fn}'s subnet to ${endpoint}`;
            }
          }
        }
        return needs;
      }
      if (declaresReach(service)) return {};
      return `${fn} is in a VPC and calls ${service} (${what}), but the VPC has no ${service} endpoint in the template and no declared route to it (a NAT gateway or an endpoint of its own)`;
    },
    apisOf: (fn) =>
      API_CALLS.filter((call) => scene.environment(fn)[call.variable] !== undefined && scene.environment(fn)[call.variable] !== '').map((call) => ({
        service: call.service(evaluate(scene.environment(fn)[call.variable])),
        what: call.what,
      })),
  };
  return { scene, createOrder, cycle };
}
