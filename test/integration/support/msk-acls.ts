/**
 * IAM statements for MSK IAM access control, turned into Apache Kafka ACLs, so that a broker with Kafka's own
 * authorizer enforces what the generated roles grant (test/integration/acl.test.ts).
 *
 * Two facts of AWS's MSK developer guide (its page on the semantics of IAM authorization policy actions and
 * resources) make the translation:
 * - each `kafka-cluster:` action is described there as the equivalent of one Kafka ACL operation on one resource
 *   type (the table below; `Connect` has none: it is the authentication itself);
 * - its "Required actions" column: an action is usable only with its required actions granted too (ReadData
 *   needs DescribeTopic and AlterGroup, AlterGroup needs DescribeGroup, everything needs Connect).
 * The second matters because Kafka's ACLs are more generous than MSK IAM: READ, WRITE, DELETE and ALTER imply
 * DESCRIBE in Kafka, while MSK IAM checks DescribeTopic apart. Granting an action only where its required
 * actions are granted too (on the same resource for a requirement of the same resource type, anywhere in the
 * role for one of another type) keeps the ACLs as strict as MSK IAM: a role without DescribeTopic gets no READ.
 */
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes, type AclEntry, type Kafka } from 'kafkajs';
import type { Statement } from '../../../src/serverless/types';
import { withAdmin } from './sasl-broker';

type ResourceKind = 'cluster' | 'topic' | 'group' | 'transactional-id';

interface ActionMapping {
  readonly resource: ResourceKind;
  /** The Kafka ACL operation AWS calls it equivalent to; none for Connect. */
  readonly operation: AclOperationTypes | undefined;
  /** The guide's "Required actions" column, without the `kafka-cluster:` prefix. */
  readonly requires: readonly string[];
}

/**
 * Every `kafka-cluster:` action of the MSK developer guide's action table: the resource it applies to, the Kafka
 * ACL it is described as equivalent to, and the actions it requires.
 */
export const MSK_ACTIONS: Readonly<Record<string, ActionMapping>> = {
  // "Grants permission to connect and authenticate to the cluster": no ACL, no requirement.
  Connect: { resource: 'cluster', operation: undefined, requires: [] },
  // "equivalent to Apache Kafka's DESCRIBE CLUSTER ACL"
  DescribeCluster: { resource: 'cluster', operation: AclOperationTypes.DESCRIBE, requires: ['Connect'] },
  // "equivalent to Apache Kafka's ALTER CLUSTER ACL"
  AlterCluster: { resource: 'cluster', operation: AclOperationTypes.ALTER, requires: ['Connect', 'DescribeCluster'] },
  // "equivalent to Apache Kafka's DESCRIBE_CONFIGS CLUSTER ACL"
  DescribeClusterDynamicConfiguration: { resource: 'cluster', operation: AclOperationTypes.DESCRIBE_CONFIGS, requires: ['Connect'] },
  // "equivalent to Apache Kafka's ALTER_CONFIGS CLUSTER ACL"
  AlterClusterDynamicConfiguration: { resource: 'cluster', operation: AclOperationTypes.ALTER_CONFIGS, requires: ['Connect', 'DescribeClusterDynamicConfiguration'] },
  // "equivalent to Apache Kafka's IDEMPOTENT_WRITE CLUSTER ACL"
  WriteDataIdempotently: { resource: 'cluster', operation: AclOperationTypes.IDEMPOTENT_WRITE, requires: ['Connect', 'WriteData'] },
  // "equivalent to Apache Kafka's CREATE CLUSTER/TOPIC ACL", on a topic resource
  CreateTopic: { resource: 'topic', operation: AclOperationTypes.CREATE, requires: ['Connect'] },
  // "equivalent to Apache Kafka's DESCRIBE TOPIC ACL"
  DescribeTopic: { resource: 'topic', operation: AclOperationTypes.DESCRIBE, requires: ['Connect'] },
  // "equivalent to Apache Kafka's ALTER TOPIC ACL"
  AlterTopic: { resource: 'topic', operation: AclOperationTypes.ALTER, requires: ['Connect', 'DescribeTopic'] },
  // "equivalent to Apache Kafka's DELETE TOPIC ACL"
  DeleteTopic: { resource: 'topic', operation: AclOperationTypes.DELETE, requires: ['Connect', 'DescribeTopic'] },
  // "equivalent to Apache Kafka's DESCRIBE_CONFIGS TOPIC ACL"
  DescribeTopicDynamicConfiguration: { resource: 'topic', operation: AclOperationTypes.DESCRIBE_CONFIGS, requires: ['Connect'] },
  // "equivalent to Apache Kafka's ALTER_CONFIGS TOPIC ACL"
  AlterTopicDynamicConfiguration: { resource: 'topic', operation: AclOperationTypes.ALTER_CONFIGS, requires: ['Connect', 'DescribeTopicDynamicConfiguration'] },
  // "equivalent to Apache Kafka's READ TOPIC ACL"
  ReadData: { resource: 'topic', operation: AclOperationTypes.READ, requires: ['Connect', 'DescribeTopic', 'AlterGroup'] },
  // "equivalent to Apache Kafka's WRITE TOPIC ACL"
  WriteData: { resource: 'topic', operation: AclOperationTypes.WRITE, requires: ['Connect', 'DescribeTopic'] },
  // "equivalent to Apache Kafka's DESCRIBE GROUP ACL"
  DescribeGroup: { resource: 'group', operation: AclOperationTypes.DESCRIBE, requires: ['Connect'] },
  // "Grants permission to join groups on a cluster, equivalent to Apache Kafka's READ GROUP ACL"
  AlterGroup: { resource: 'group', operation: AclOperationTypes.READ, requires: ['Connect', 'DescribeGroup'] },
  // "equivalent to Apache Kafka's DELETE GROUP ACL"
  DeleteGroup: { resource: 'group', operation: AclOperationTypes.DELETE, requires: ['Connect', 'DescribeGroup'] },
  // "equivalent to Apache Kafka's DESCRIBE TRANSACTIONAL_ID ACL"
  DescribeTransactionalId: { resource: 'transactional-id', operation: AclOperationTypes.DESCRIBE, requires: ['Connect'] },
  // "equivalent to Apache Kafka's WRITE TRANSACTIONAL_ID ACL"
  AlterTransactionalId: { resource: 'transactional-id', operation: AclOperationTypes.WRITE, requires: ['Connect', 'DescribeTransactionalId', 'WriteData'] },
};

const RESOURCE_TYPES: Readonly<Record<ResourceKind, AclResourceTypes>> = {
  cluster: AclResourceTypes.CLUSTER,
  topic: AclResourceTypes.TOPIC,
  group: AclResourceTypes.GROUP,
  'transactional-id': AclResourceTypes.TRANSACTIONAL_ID,
};

/** One action granted on one resource pattern. */
export interface Grant {
  readonly action: string;
  readonly kind: ResourceKind;
  /** The resource name, or its prefix when `prefixed` (`kafka-cluster` for the cluster). */
  readonly name: string;
  readonly prefixed: boolean;
}

/**
 * The resource an MSK ARN names: `...:cluster/<cluster>/<uuid>`, `...:topic/<cluster>/<uuid>/<topic>`,
 * `...:group/<cluster>/<uuid>/<group>`, `...:transactional-id/<cluster>/<uuid>/<id>`, a trailing `*` a prefix.
 */
export function mskResource(arn: string): { kind: ResourceKind; name: string; prefixed: boolean } | undefined {
  const match = /^arn:[^:]+:kafka:[^:]*:[^:]*:(cluster|topic|group|transactional-id)\/[^/]+\/[^/]+(?:\/(.+))?$/.exec(arn);
  if (match === null) return undefined;
  const kind = match[1] as ResourceKind;
  if (kind === 'cluster') return match[2] === undefined ? { kind, name: 'kafka-cluster', prefixed: false } : undefined;
  const name = match[2];
  if (name === undefined) return undefined;
  return name.endsWith('*') ? { kind, name: name.slice(0, -1), prefixed: true } : { kind, name, prefixed: false };
}

/** The `kafka-cluster:` grants of some statements; other actions (AWS APIs, EC2, logs) are not Kafka requests. */
export function grantsOf(statements: readonly Statement[]): Grant[] {
  const grants: Grant[] = [];
  for (const statement of statements) {
    const resources = (Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource]).filter((r): r is string => typeof r === 'string');
    for (const full of statement.Action) {
      if (!full.startsWith('kafka-cluster:')) continue;
      const action = full.slice('kafka-cluster:'.length);
      const mapping = MSK_ACTIONS[action];
      if (mapping === undefined) throw new Error(`No Kafka ACL mapping for ${full}`);
      for (const arn of resources) {
        const resource = mskResource(arn);
        // IAM: an action applies only to resources of its own type.
        if (resource !== undefined && resource.kind === mapping.resource) grants.push({ action, ...resource });
      }
    }
  }
  return grants;
}

function covers(outer: Grant, inner: Grant): boolean {
  if (outer.kind !== inner.kind) return false;
  if (outer.prefixed) return inner.name.startsWith(outer.name);
  return !inner.prefixed && outer.name === inner.name;
}

/**
 * The grants MSK IAM would honour: each action only where its required actions are granted too (a requirement of
 * the same resource type on a pattern covering the same resource; one of another type anywhere), to a fixpoint.
 */
export function effectiveGrants(grants: readonly Grant[]): Grant[] {
  let current = [...grants];
  for (;;) {
    const kept = current.filter((grant) =>
      MSK_ACTIONS[grant.action]!.requires.every((required) => {
        const kind = MSK_ACTIONS[required]!.resource;
        return current.some((other) => other.action === required && (kind === grant.kind ? covers(other, grant) : true));
      }),
    );
    if (kept.length === current.length) return kept;
    current = kept;
  }
}

/** The Kafka ACLs of a principal for these statements. */
export function aclsFor(principal: string, statements: readonly Statement[]): AclEntry[] {
  const seen = new Set<string>();
  const acls: AclEntry[] = [];
  for (const grant of effectiveGrants(grantsOf(statements))) {
    const { operation, resource } = MSK_ACTIONS[grant.action]!;
    if (operation === undefined) continue;
    const acl: AclEntry = {
      resourceType: RESOURCE_TYPES[resource],
      resourceName: grant.name,
      resourcePatternType: grant.prefixed ? ResourcePatternTypes.PREFIXED : ResourcePatternTypes.LITERAL,
      principal,
      host: '*',
      operation,
      permissionType: AclPermissionTypes.ALLOW,
    };
    const key = JSON.stringify(acl);
    if (!seen.has(key)) acls.push(acl);
    seen.add(key);
  }
  return acls;
}

const aclKey = (acl: Pick<AclEntry, 'resourceType' | 'resourceName' | 'resourcePatternType' | 'operation'>): string =>
  `${acl.resourceType}|${acl.resourcePatternType}|${acl.resourceName}|${acl.operation}`;

/**
 * Replaces every ACL of `principal` with `acls` (as the super user's `kafka`), and waits until the broker's
 * authorizer describes exactly these: ACLs travel through the metadata log before the broker enforces them.
 */
export async function setAcls(kafka: Kafka, principal: string, acls: readonly AclEntry[]): Promise<void> {
  const any = {
    resourceType: AclResourceTypes.ANY,
    resourcePatternType: ResourcePatternTypes.ANY,
    principal,
    operation: AclOperationTypes.ANY,
    permissionType: AclPermissionTypes.ANY,
  };
  const wanted = new Set(acls.map(aclKey));
  await withAdmin(kafka, async (admin) => {
    await admin.deleteAcls({ filters: [any] });
    if (acls.length > 0) await admin.createAcls({ acl: [...acls] });
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { resources } = await admin.describeAcls(any);
      const have = new Set(resources.flatMap((r) => r.acls.map((acl) => aclKey({ ...r, operation: acl.operation }))));
      if (have.size === wanted.size && [...wanted].every((key) => have.has(key))) return;
      if (Date.now() > deadline) throw new Error(`the ACLs of ${principal} did not settle: have ${[...have].join(', ')}, want ${[...wanted].join(', ')}`);
      await new Promise((done) => setTimeout(done, 100));
    }
  });
}

/**
 * Kafka's refusals found on an error and its causes (kafkajs wraps what its retrier gives up on): each
 * `*_AUTHORIZATION_FAILED` type, or `succeeded` for no error, or the messages when none is a refusal.
 */
export function refusalOf(error: unknown): string {
  if (error === undefined) return 'succeeded';
  const seen: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    const { type, kafkaError, message } = current as { type?: unknown; kafkaError?: unknown; message?: unknown };
    for (const name of [type, kafkaError]) if (typeof name === 'string' && name.endsWith('AUTHORIZATION_FAILED')) return name;
    if (typeof message === 'string') seen.push(message);
    current = (current as { cause?: unknown }).cause;
  }
  return `no authorization error: ${seen.join(' <- ')}`;
}
