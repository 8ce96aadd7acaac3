/**
 * The kafkajs internals `MemberlessOffsetCommitter` needs, behind type checks. kafkajs has no public way to
 * send an OffsetCommit without a member (what Kafka's own AdminClient `alterConsumerGroupOffsets` does), but
 * its cluster and broker objects send one as any other request. They are private: this module was written
 * against kafkajs 2.2.4, the version pinned in package-lock.json (node_modules/kafkajs/src/index.js,
 * src/cluster/index.js, src/broker/index.js, src/protocol/requests/offsetCommit). Everything read here is
 * checked at runtime; anything unexpected is a `KafkaInternalsChangedError`, never a guess.
 */
import { KafkaInternalsChangedError } from './errors';

/** The description of the `Symbol` under which a kafkajs `Kafka` instance keeps its cluster factory. */
export const CREATE_CLUSTER_SYMBOL = 'private:Kafka:createCluster';

/** One OffsetCommit request, as kafkajs' `broker.offsetCommit` takes it. */
export interface OffsetCommitRequest {
  readonly groupId: string;
  /** `-1` with an empty `memberId`: a commit by no member, which Kafka takes only while the group is empty. */
  readonly groupGenerationId: number;
  readonly memberId: string;
  /** `-1`: the broker's own offset retention (request versions 2-4; later versions drop the field). */
  readonly retentionTime: number;
  readonly topics: ReadonlyArray<{
    readonly topic: string;
    readonly partitions: ReadonlyArray<{ readonly partition: number; readonly offset: string; readonly metadata?: string }>;
  }>;
}

/** One partition of a decoded OffsetCommit response (`errorCode` 0: committed). */
export interface OffsetCommitAck {
  readonly topic: string;
  readonly partition: number;
  readonly errorCode: number;
}

/** The group coordinator: a kafkajs `Broker`. */
export interface InternalCoordinator {
  /** Resolves with the decoded response; kafkajs throws the first partition's error, if any. */
  offsetCommit(request: OffsetCommitRequest): Promise<OffsetCommitAck[]>;
}

/** A kafkajs `Cluster` of its own: connections apart from any producer, consumer or admin. */
export interface InternalCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  /** Loads the metadata of these topics (and with it the broker list); fails on a topic that does not exist. */
  addMultipleTargetTopics(topics: readonly string[]): Promise<void>;
  findGroupCoordinator(group: { readonly groupId: string }): Promise<InternalCoordinator>;
}

type Method = (...args: unknown[]) => unknown;

function changed(what: string): KafkaInternalsChangedError {
  return new KafkaInternalsChangedError(
    `kafkajs internals changed: ${what}. MemberlessOffsetCommitter was written against kafkajs 2.2.4; ` +
      'pin kafkajs to 2.2.4 or commit through AdminOffsetCommitter (public API, about 5 s per topic)',
  );
}

function hasMethods<K extends string>(value: unknown, names: readonly K[]): value is Record<K, Method> {
  if (typeof value !== 'object' || value === null) return false;
  return names.every((name) => typeof (value as Record<string, unknown>)[name] === 'function');
}

/**
 * Finds the cluster factory of a kafkajs `Kafka` instance: an own property under a `Symbol` described
 * `private:Kafka:createCluster`, called with the cluster options (`kafka.admin()` passes
 * `{ allowAutoTopicCreation: false }`). Throws `KafkaInternalsChangedError` if there is none.
 */
export function clusterFactoryOf(kafka: object): (options: { allowAutoTopicCreation: boolean }) => InternalCluster {
  const symbol = Object.getOwnPropertySymbols(kafka).find((s) => s.description === CREATE_CLUSTER_SYMBOL);
  if (symbol === undefined) throw changed(`a Kafka instance has no Symbol(${CREATE_CLUSTER_SYMBOL}) property`);
  const factory: unknown = Reflect.get(kafka, symbol);
  if (typeof factory !== 'function') throw changed(`Symbol(${CREATE_CLUSTER_SYMBOL}) is not a function`);
  return (options) => wrapCluster(Reflect.apply(factory, kafka, [options]));
}

function wrapCluster(cluster: unknown): InternalCluster {
  const methods = ['connect', 'disconnect', 'addMultipleTargetTopics', 'findGroupCoordinator'] as const;
  if (!hasMethods(cluster, methods)) throw changed(`a cluster lacks one of ${methods.join(', ')}`);
  return {
    connect: async () => {
      await cluster.connect();
    },
    disconnect: async () => {
      await cluster.disconnect();
    },
    addMultipleTargetTopics: async (topics) => {
      await cluster.addMultipleTargetTopics([...topics]);
    },
    findGroupCoordinator: async ({ groupId }) => {
      const broker = await cluster.findGroupCoordinator({ groupId });
      if (!hasMethods(broker, ['offsetCommit'] as const)) throw changed('the group coordinator has no offsetCommit');
      return {
        offsetCommit: async (request) => parseOffsetCommitResponse(await broker.offsetCommit(request)),
      };
    },
  };
}

/**
 * Reads a decoded OffsetCommit response (`{ responses: [{ topic, partitions: [{ partition, errorCode }] }] }`,
 * the same for request versions 0-5) into one entry per partition.
 */
export function parseOffsetCommitResponse(response: unknown): OffsetCommitAck[] {
  const responses = field(response, 'responses');
  if (!Array.isArray(responses)) throw changed('an OffsetCommit response has no `responses` array');
  return responses.flatMap((entry: unknown) => {
    const topic = field(entry, 'topic');
    const partitions = field(entry, 'partitions');
    if (typeof topic !== 'string' || !Array.isArray(partitions)) {
      throw changed('an OffsetCommit response entry has no `topic` string and `partitions` array');
    }
    return partitions.map((p: unknown): OffsetCommitAck => {
      const partition = field(p, 'partition');
      const errorCode = field(p, 'errorCode');
      if (typeof partition !== 'number' || typeof errorCode !== 'number') {
        throw changed('an OffsetCommit response partition has no numeric `partition` and `errorCode`');
      }
      return { topic, partition, errorCode };
    });
  });
}

/** A property of a value that may not be an object (`undefined` when it is not). */
export function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null ? Reflect.get(value, name) : undefined;
}
