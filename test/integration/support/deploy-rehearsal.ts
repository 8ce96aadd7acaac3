/**
 * A deploy rehearsal: what CloudFormation would do with a packaged template, read from the template and the
 * dependency graph cfn-lint draws of it (support/cfn-graph.py: Ref, Fn::GetAtt, Fn::Sub and DependsOn, with where in
 * the resource each was found), for one configuration (the parameters' defaults, which `serverless.yml` sets per
 * stage). Conditions are evaluated and an edge found inside `Fn::If` holds only on the branch its condition takes.
 *
 * It proves, mechanically, three things a reader otherwise finds by hand:
 * - order: everything a custom resource needs to do its work and to answer (its provider, the worker it invokes,
 *   their roles, and for a function in a VPC the endpoints and routes of each AWS API it calls) is in the resource's
 *   dependency closure, so CloudFormation creates it before the resource and deletes it after (create and delete
 *   order follow the graph: a resource is created after all it depends on, deleted before any of them);
 * - reach: every function that reaches a private address (the stack's MSK or ElastiCache, a private host) sits in a
 *   VPC, and from the VPC reaches each AWS API it calls (docs/deploy.md's API table: `API_CALLS` below) through an
 *   endpoint of the template or a reach the configuration declares (a NAT gateway or endpoints of the VPC's own);
 * - grants: with MSK IAM, every topic a handler reads or writes (its triggers, retry tiers, dead letters, declared
 *   outputs, and what its code sends) is granted to its role, and its code sends only to declared outputs.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';

export interface TemplateResource {
  readonly Type: string;
  readonly Condition?: string;
  readonly Properties?: Record<string, unknown>;
  readonly DependsOn?: string | string[];
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

  /** A value as CloudFormation would resolve it here; stack resources by stand-ins that keep their kind visible. */
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
  while (placed.size < dependsOn.size) {
    const ready = [...dependsOn].filter(([id, after]) => !placed.has(id) && [...after].every((dependency) => placed.has(dependency))).map(([id]) => id);
    if (ready.length === 0) throw new Error(`a dependency cycle among ${[...dependsOn.keys()].filter((id) => !placed.has(id)).join(', ')}`);
    for (const id of ready.sort()) {
      placed.add(id);
      createOrder.push(id);
    }
  }

  const problems: string[] = [];
  const functions = Object.keys(resources).filter((id) => exists(id) && resources[id]!.Type === 'AWS::Lambda::Function');
  const properties = (id: string): Record<string, unknown> => resources[id]?.Properties ?? {};
  const environment = (id: string): Record<string, unknown> => ((properties(id)['Environment'] as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {});
  const inVpc = (id: string): boolean => {
    const vpc = evaluate(properties(id)['VpcConfig']) as { SubnetIds?: unknown[] } | undefined;
    return Array.isArray(vpc?.SubnetIds) && vpc.SubnetIds.some((subnet) => subnet !== '');
  };
  const roleOf = (id: string): string | undefined => {
    const role = (properties(id)['Role'] as { 'Fn::GetAtt'?: unknown[] } | undefined)?.['Fn::GetAtt']?.[0];
    return typeof role === 'string' && resources[role] !== undefined ? role : undefined;
  };
  const endpoints = Object.keys(resources).filter((id) => exists(id) && resources[id]!.Type === 'AWS::EC2::VPCEndpoint');
  const declared = new Set(options.declaredReach ?? []);

  /** What a function in a VPC needs to reach `service`: an endpoint of the template (with its routes), else a declared reach. */
  const reachOf = (fn: string, service: string, what: string): Record<string, string> | string => {
    const endpoint = endpoints.find((id) => String(evaluate(properties(id)['ServiceName'])).endsWith(`.${service}`));
    if (endpoint !== undefined) {
      const needs: Record<string, string> = { [endpoint]: `${fn} reaches ${service} (${what}) through it` };
      if (properties(endpoint)['VpcEndpointType'] === 'Gateway') {
        const tables = new Set((evaluate(properties(endpoint)['RouteTableIds']) as unknown[]).map(String));
        const subnets = new Set(((evaluate(properties(fn)['VpcConfig']) as { SubnetIds: unknown[] }).SubnetIds ?? []).map(String));
        for (const id of Object.keys(resources).filter((other) => exists(other) && resources[other]!.Type === 'AWS::EC2::SubnetRouteTableAssociation')) {
          if (tables.has(String(evaluate(properties(id)['RouteTableId']))) && subnets.has(String(evaluate(properties(id)['SubnetId'])))) {
            needs[id] = `the route of ${fn}'s subnet to ${endpoint}`;
          }
        }
      }
      return needs;
    }
    if (declared.has(service) || declared.has('*')) return {};
    return `${fn} is in a VPC and calls ${service} (${what}), but the VPC has no ${service} endpoint in the template and no declared route to it (a NAT gateway or an endpoint of its own)`;
  };
  const apisOf = (fn: string): Array<{ service: string; what: string }> =>
    API_CALLS.filter((call) => environment(fn)[call.variable] !== undefined && environment(fn)[call.variable] !== '').map((call) => ({
      service: call.service(evaluate(environment(fn)[call.variable])),
      what: call.what,
    }));

  // Order: what each custom resource needs is in its closure.
  const needs: Record<string, Record<string, string>> = {};
  for (const id of Object.keys(resources).filter((resource) => exists(resource) && /^Custom::|^AWS::CloudFormation::CustomResource$/.test(resources[resource]!.Type))) {
    const token = (properties(id)['ServiceToken'] as { 'Fn::GetAtt'?: unknown[] } | undefined)?.['Fn::GetAtt']?.[0];
    if (typeof token !== 'string') continue;
    const wanted: Record<string, string> = { [token]: 'its provider, which CloudFormation invokes' };
    const add = (fn: string, role: string, calls: Array<{ service: string; what: string }>): void => {
      const roleId = roleOf(fn);
      if (roleId !== undefined) wanted[roleId] = `the role of ${fn} (${role})`;
      if (!inVpc(fn)) return;
      for (const call of calls) {
        const reach = reachOf(fn, call.service, call.what);
        if (typeof reach === 'string') problems.push(`${id}: ${reach}`);
        else Object.assign(wanted, reach);
      }
    };
    add(token, 'provider', [{ service: 's3', what: "its answer to CloudFormation's pre-signed S3 URL" }, ...apisOf(token)]);
    for (const worker of Object.values(environment(token))) {
      const workerId = (worker as { Ref?: unknown } | null)?.Ref;
      if (typeof workerId !== 'string' || resources[workerId]?.Type !== 'AWS::Lambda::Function') continue;
      wanted[workerId] = `the worker ${token} invokes`;
      add(workerId, 'worker', apisOf(workerId));
    }
    const reachable = closure(id);
    for (const [needed, why] of Object.entries(wanted)) {
      if (!reachable.has(needed)) {
        problems.push(
          `${id} does not depend on ${needed} (${why}): CloudFormation may create it after ${id} and delete it before ${id}'s Delete is answered`,
        );
      }
    }
    needs[id] = wanted;
  }

  // Reach: a function with a private target is in a VPC; from there it reaches the AWS APIs it calls.
  const triggersOf = (fn: string): string[] =>
    Object.keys(resources).filter((id) => exists(id) && resources[id]!.Type === 'AWS::Lambda::EventSourceMapping' && JSON.stringify(properties(id)['FunctionName']).includes(`"${fn}"`));
  const privateHost = /(^|[/@,])(10\.|192\.168\.|172\.(1[6-9]|2[0-9]|3[01])\.|[^,/:@]+\.cache\.amazonaws\.com|[^,/:@]+\.kafka\.[a-z0-9-]+\.amazonaws\.com)/;
  for (const fn of functions) {
    const reasons: string[] = [];
    for (const [name, value] of Object.entries(environment(fn))) {
      const text = JSON.stringify(value);
      const stack = [...text.matchAll(/"(?:Ref|Fn::GetAtt)":\s*\[?"([A-Za-z0-9]+)"/g), ...text.matchAll(/\$\{([A-Za-z0-9]+)\./g)].map((match) => match[1]!);
      const privateResource = stack.find((ref) => /^AWS::(ElastiCache|MSK)::|^Custom::KafkaLanesTopics$/.test(resources[ref]?.Type ?? ''));
      if (privateResource !== undefined) reasons.push(`${name} names ${privateResource}`);
      else if (typeof value === 'string' && privateHost.test(value)) reasons.push(`${name} names a private address (${value})`);
    }
    const mskTrigger = triggersOf(fn).find((trigger) => String(evaluate(properties(trigger)['EventSourceArn'])).includes(':kafka:'));
    if (mskTrigger !== undefined && Object.keys(environment(fn)).some((name) => name.startsWith('KAFKA_LANES_'))) reasons.push(`its producers write to the cluster of ${mskTrigger}`);
    if (reasons.length > 0 && !inVpc(fn)) problems.push(`${fn} reaches private addresses (${reasons.join('; ')}) but is in no VPC`);
    if (inVpc(fn)) {
      for (const call of apisOf(fn)) {
        const reach = reachOf(fn, call.service, call.what);
        if (typeof reach === 'string') problems.push(reach);
      }
    }
  }
  // The MSK trigger's pollers, in the stack's cluster's VPC: Lambda and STS (Lambda developer guide, "Amazon MSK network configuration").
  for (const trigger of Object.keys(resources).filter((id) => exists(id) && resources[id]!.Type === 'AWS::Lambda::EventSourceMapping')) {
    const source = (properties(trigger)['EventSourceArn'] as { Ref?: unknown } | undefined)?.Ref;
    if (typeof source !== 'string' || !(resources[source]?.Type ?? '').startsWith('AWS::MSK::')) continue;
    for (const service of ['lambda', 'sts']) {
      const endpoint = endpoints.find((id) => String(evaluate(properties(id)['ServiceName'])).endsWith(`.${service}`));
      if (endpoint === undefined && !declared.has(service) && !declared.has('*')) problems.push(`${trigger}'s pollers in ${source}'s VPC reach no ${service} endpoint and no declared route to it`);
    }
  }

  // Grants: with MSK IAM, every topic read or written is granted; the code sends only to declared outputs.
  for (const fn of functions) {
    const env = environment(fn);
    const topic = env['KAFKA_LANES_PRODUCE_TOPIC'];
    if (topic === undefined || env['KAFKA_LANES_SASL_MECHANISM'] !== 'aws-iam') continue;
    // The produce function writes the source topic of its group's trigger.
    const role = roleOf(fn);
    const statements = role === undefined ? [] : ((properties(role)['Policies'] as Array<{ PolicyDocument: { Statement: Array<{ Action: string[]; Resource: unknown }> } }>) ?? []).flatMap((policy) => policy.PolicyDocument.Statement);
    const written = statements.some((statement) => statement.Action.includes('kafka-cluster:WriteData') && JSON.stringify(evaluate(statement.Resource)).includes(`/${String(topic)}"`));
    if (!written) problems.push(`${role ?? fn} does not grant WriteData on \`${String(topic)}\`, which ${fn} writes`);
  }
  for (const fn of functions) {
    const env = environment(fn);
    const triggers = triggersOf(fn);
    if (triggers.length === 0 || env['KAFKA_LANES_GROUP'] === undefined) continue;
    const group = String(env['KAFKA_LANES_GROUP']);
    const outputs = String(env['KAFKA_LANES_OUTPUTS'] ?? '').split(',').filter((topic) => topic !== '');
    const sends = options.sends?.[fn] ?? [];
    for (const topic of sends.filter((send) => !outputs.includes(send))) {
      problems.push(`${fn}'s code sends to \`${topic}\`, not a declared output (kafkaLanes.outputs: ${outputs.join(', ') || 'none'}): MSK IAM would refuse the write`);
    }
    if (env['KAFKA_LANES_SASL_MECHANISM'] !== 'aws-iam') continue;
    const role = roleOf(fn);
    const statements = role === undefined ? [] : ((properties(role)['Policies'] as Array<{ PolicyDocument: { Statement: Array<{ Action: string[]; Resource: unknown }> } }>) ?? []).flatMap((policy) => policy.PolicyDocument.Statement);
    const granted = (action: string, arn: string): boolean =>
      statements.some((statement) => {
        if (!statement.Action.includes(action)) return false;
        const listed = evaluate(statement.Resource);
        return (Array.isArray(listed) ? listed : [listed]).some((resource) => new RegExp(`^${String(resource).split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`).test(arn));
      });
    for (const trigger of triggers) {
      const cluster = String(evaluate(properties(trigger)['EventSourceArn']));
      const topicArn = (topic: string): string => cluster.replace(':cluster/', ':topic/') + `/${topic}`;
      const iamTrigger = JSON.stringify(properties(trigger)['SourceAccessConfigurations'] ?? []).includes('SASL_SCRAM') === false;
      for (const topic of (properties(trigger)['Topics'] as string[]) ?? []) {
        if (iamTrigger && !granted('kafka-cluster:ReadData', topicArn(topic))) problems.push(`${role ?? fn} does not grant ReadData on \`${topic}\`, which ${trigger} reads`);
      }
      const tiers = String(env['KAFKA_LANES_RETRY_TIERS'] ?? '').split(',').filter((tier) => tier !== '');
      for (const topic of [...tiers.map((tier) => `${group}.retry.${tier}`), `${group}.dlq`, ...outputs, ...sends]) {
        if (!granted('kafka-cluster:WriteData', topicArn(topic))) problems.push(`${role ?? fn} does not grant WriteData on \`${topic}\`, which ${fn} writes`);
      }
    }
  }
  return { problems: [...new Set(problems)], createOrder, needs };
}
