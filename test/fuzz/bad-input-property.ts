/**
 * The bad-input property (issue 6), shared by the integration test (a few hundred events) and `npm run fuzz`
 * (as many as asked): mutated real-shaped Kafka events go through the processor on the real broker and
 * Redis, and every record of the input must be accounted for.
 *
 * Asserted for each event: `process` returns, or throws `EventDecodeError` exactly when the event as a whole
 * is malformed; every record is run, parked, copied to a retry or dead-letter topic, or reported back;
 * records sharing an offset with differing contents are all dead-lettered; `Object.prototype` is untouched.
 * (An unhandled rejection fails the run: the scripts start node with `--unhandled-rejections=strict`.)
 * Assertions never print the event: node's assert would diff megabytes of nested JSON for minutes.
 */
import { CompletionStore } from '../../src/completion/store';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import type { Cluster, Redis } from 'ioredis';
import { z } from 'zod';
import { parkKey } from '../../src/completion';
import { clip, jsonText, thrownText } from '../../src/describe';
import {
  decodeKafkaEvent,
  encodeBase64,
  EventDecodeError,
  planOffsets,
  topicPartitionKey,
  type DecodedKafkaEvent,
} from '../../src/event';
import type { HandOffItem } from '../../src/handoff';
import { resolveOptions, type LanesOptionsInput } from '../../src/options';
import { laneIdOf } from '../../src/lanes/lane-id';
import type { LanesOptions } from '../../src/options/lanes-options';
import { LanesFunction, type HandOffSink } from '../../src/handler/lanes-function';
import { createTelemetry } from '../../src/telemetry';

type Json = Record<string, unknown>;

const FIXTURES = ['msk.json', 'msk-two-partitions.json', 'self-managed.json', 'self-managed-schema-registry.json'];

function fixtureRecords(): Json[] {
  return FIXTURES.flatMap((name) => {
    const event = JSON.parse(readFileSync(join(__dirname, '../fixtures/events', name), 'utf8')) as { records: Record<string, Json[]> };
    return Object.values(event.records).flat();
  });
}

/** An array nested `depth` levels deep, built without recursion. */
export function nested(depth: number, inner: unknown = 1): unknown {
  let value = inner;
  for (let i = 0; i < depth; i += 1) value = [value];
  return value;
}

/** What one mutation does to a record, given the record (a fresh copy) and its partition's other records. */
type Mutation = (record: Json, siblings: Json[]) => Json | Json[];

const FIELDS = ['topic', 'partition', 'offset', 'timestamp', 'timestampType', 'key', 'value', 'headers', 'keySchemaMetadata', 'valueSchemaMetadata'];
const ODD_NUMBERS = [1e300, 0.5, -1, -0, 2 ** 53, Number.MAX_SAFE_INTEGER, 2_147_483_648, 1e-7];
const ODD_BASE64 = ['-_8=', 'YQ', 'Y Q==', 'YQ==\n', '====', 'not base64!', 'YR==', ''];
const ODD_HEADERS: unknown[] = [
  [{ a: [1, 2], b: [3] }],
  [{}],
  [{ h: [200] }],
  [{ h: 'text' }],
  [null],
  { h: [1] },
  [{ h: [1.5] }],
  JSON.parse('[{"__proto__":[112,111,108,108,117,116,101,100]}]'),
  [{ h: [-128, 127, 0] }, { h: [1] }],
];

function mutation(): fc.Arbitrary<Mutation> {
  const field = fc.constantFrom(...FIELDS);
  return fc.oneof(
    fc.tuple(field, fc.jsonValue({ maxDepth: 3 })).map(([name, value]): Mutation => (r) => ({ ...r, [name]: value })),
    field.map((name): Mutation => (r) => {
      const copy = { ...r };
      delete copy[name];
      return copy;
    }),
    fc.tuple(fc.constantFrom('offset', 'partition', 'timestamp'), fc.constantFrom(...ODD_NUMBERS)).map(([name, value]): Mutation => (r) => ({ ...r, [name]: value })),
    fc.tuple(fc.constantFrom('key', 'value'), fc.constantFrom(...ODD_BASE64)).map(([name, value]): Mutation => (r) => ({ ...r, [name]: value })),
    fc.constantFrom(...ODD_HEADERS).map((headers): Mutation => (r) => ({ ...r, headers })),
    fc.constantFrom('x', 'mytopic', 'a-b-0', 'ü{}:', '').map((topic): Mutation => (r) => ({ ...r, topic })),
    fc.tuple(fc.constantFrom('extra', 'key', 'value', 'headers'), fc.integer({ min: 2_000, max: 20_000 })).map(([name, depth]): Mutation => (r) => ({
      ...r,
      [name]: name === 'headers' ? [{ h: [1, nested(depth)] }] : nested(depth),
    })),
    fc.constant<Mutation>((r) => ({ ...(JSON.parse('{"__proto__":{"polluted":true}}') as Json), ...r })),
    fc.constant<Mutation>((r) => Object.assign(JSON.parse('{"__proto__":{"polluted":true}}') as Json, r)),
    // Records sharing an offset: an identical copy, or one with another value.
    fc.constant<Mutation>((r) => [r, { ...r }]),
    fc.constant<Mutation>((r) => [r, { ...r, value: encodeBase64(Buffer.from('{"key":"other"}')) }]),
    fc.constant<Mutation>((r, siblings) => [r, { ...(siblings[0] ?? r), offset: r.offset }]),
  );
}

/** Options of the generated events. */
export interface EventShape {
  /** A large value (bytes) in some records; 0 for none. */
  readonly maxLargeValue: number;
}

/**
 * A Kafka event built from the fixture records: 1-3 partitions of 1-8 records, some mutated. Given as a
 * function of its topic, so that every run (shrinking included) gets a topic of its own and starts from an
 * empty completion bitmap.
 */
export function mutatedEvent(shape: EventShape): fc.Arbitrary<(topicPrefix: string) => unknown> {
  const base = fixtureRecords();
  const record = fc.record({
    template: fc.constantFrom(...base),
    key: fc.constantFrom('k0', 'k1', 'k2', null),
    value: fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom('{"key":"value"}', '{"key":"v2"}', '{"nokey":1}', 'not json', '') },
      { weight: shape.maxLargeValue > 0 ? 1 : 0, arbitrary: fc.integer({ min: 1, max: Math.max(1, shape.maxLargeValue) }).map((n) => `{"key":"${'x'.repeat(n)}"}`) },
    ),
    mutations: fc.array(mutation(), { maxLength: 2 }),
    mutated: fc.boolean(),
  });
  const partition = fc.array(record, { minLength: 1, maxLength: 8 });
  // One event in fifteen is malformed as a whole.
  const wholeEventMutation = fc.oneof(
    { weight: 14, arbitrary: fc.constant(null) },
    {
      weight: 1,
      arbitrary: fc.constantFrom<(event: Json) => unknown>(
        (e) => ({ ...e, eventSource: 'aws:sqs' }),
        (e) => ({ ...e, records: [] }),
        (e) => ({ ...e, records: { 'no-partition-here': [] } }),
        (e) => ({ ...e, records: { 'orders-0': 'not a list' } }),
        (e) => ({ ...e, bootstrapServers: 42 }),
        () => JSON.parse('{"__proto__":{"polluted":true},"eventSource":"aws:kafka"}') as unknown,
      ),
    },
  );
  return fc.tuple(fc.uniqueArray(fc.nat(2), { minLength: 1, maxLength: 3 }), fc.array(partition, { minLength: 3, maxLength: 3 }), wholeEventMutation, fc.nat(1000))
    .map(([partitions, lists, eventMutation, firstOffset]) => withText((topicPrefix: string): unknown => {
      const records: Record<string, Json[]> = {};
      for (const p of partitions) {
        const list: Json[] = [];
        lists[p]!.forEach((r, i) => {
          const clean: Json = {
            ...r.template,
            topic: topicPrefix,
            partition: p,
            offset: firstOffset + i,
            key: r.key === null ? null : encodeBase64(Buffer.from(r.key)),
            value: encodeBase64(Buffer.from(r.value)),
          };
          let out: Json[] = [clean];
          if (r.mutated) {
            for (const m of r.mutations) out = out.flatMap((one): Json[] => { const next = m({ ...one }, list); return Array.isArray(next) ? next : [next]; });
          }
          list.push(...out);
        });
        records[topicPartitionKey(topicPrefix, p)] = list;
      }
      const event: Json = { eventSource: 'SelfManagedKafka', bootstrapServers: '127.0.0.1:9092', records };
      return eventMutation === null ? event : eventMutation(event);
    }));
}

/** A counterexample prints as its event (topic `T`), cut short, instead of the builder's source. */
function withText(build: (topicPrefix: string) => unknown): (topicPrefix: string) => unknown {
  return Object.assign(build, { [fc.toStringMethod]: () => clip(jsonText(build('T')), 4_000) });
}

let eventCount = 0;

/** A topic name no other event of this process used. */
export function freshTopic(prefix: string): string {
  eventCount += 1;
  return `${prefix}${eventCount.toString(36)}`;
}

/** The processor under test, its sink recording what was handed off, and what the handler ran. */
export interface FuzzRig {
  readonly options: LanesOptions;
  readonly processor: LanesFunction;
  readonly written: HandOffItem[];
  readonly ran: Set<string>;
}

/**
 * A processor on the real stack, key ordering, the value checked by a zod schema; its handler fails
 * (retriable) for offsets ending in 3, so lanes block and later records park.
 */
export function fuzzRig(group: string, redis: Redis | Cluster, writer: HandOffSink, extra: Partial<LanesOptionsInput> = {}): FuzzRig {
  const options = resolveOptions({
    group,
    retry: { tiers: ['1s', '1m'] },
    concurrency: 16,
    value: z.object({ key: z.string() }),
    ...extra,
  } as LanesOptionsInput, {});
  const written: HandOffItem[] = [];
  const ran = new Set<string>();
  const sink: HandOffSink = {
    async write(items, opts) {
      // A copy the broker refused for good comes back as a value-less dead letter: handed off all the same.
      const outcomes = await writer.write(items, opts);
      written.push(...items);
      return outcomes;
    },
  };
  const processor = new LanesFunction({
    options,
    store: new CompletionStore(redis, options.caps),
    handOff: () => sink,
    telemetry: createTelemetry(group),
    handler: async (record) => {
      ran.add(`${topicPartitionKey(record.topic, record.partition)}@${record.offset}`);
      if (record.offset % 10 === 3) throw new Error('fails for the property: goes to the retry topic');
    },
  });
  return { options, processor, written, ran };
}

function prototypeSnapshot(): string {
  return Object.getOwnPropertyNames(Object.prototype).sort().join(',');
}

/**
 * Runs one event through the rig and asserts the property. Returns what happened, for statistics.
 */
export async function checkEvent(rig: FuzzRig, redis: Redis | Cluster, event: unknown): Promise<'decode-error' | 'processed'> {
  const before = prototypeSnapshot();
  rig.written.length = 0;
  rig.ran.clear();
  let decoded: DecodedKafkaEvent | undefined;
  try {
    decoded = decodeKafkaEvent(event);
  } catch (error) {
    assert.ok(error instanceof EventDecodeError, `the decoder threw ${thrownText(error, 500)}, not an EventDecodeError`);
  }
  let response;
  try {
    response = await rig.processor.process(event, { getRemainingTimeInMillis: () => 60_000 });
  } catch (error) {
    assert.ok(decoded === undefined, `process threw ${thrownText(error, 500)} for an event that decodes`);
    assert.ok(error instanceof EventDecodeError, `process threw ${thrownText(error, 500)}, not an EventDecodeError`);
  }
  assert.ok(prototypeSnapshot() === before, 'Object.prototype changed');
  assert.ok(({} as Json).polluted === undefined, 'Object.prototype polluted');
  if (decoded === undefined) return 'decode-error';
  assert.ok(response !== undefined);

  const reported = new Set(response.batchItemFailures.map(({ itemIdentifier }) => `${itemIdentifier.partition}@${itemIdentifier.offset}`));
  const writtenAt = new Map<string, HandOffItem[]>();
  for (const item of rig.written) {
    const where = `${topicPartitionKey(item.origin.topic, item.origin.partition)}@${item.origin.offset ?? 'unknown'}`;
    writtenAt.set(where, [...(writtenAt.get(where) ?? []), item]);
  }
  for (const batch of decoded.partitions) {
    const tp = topicPartitionKey(batch.topic, batch.partition);
    const ref = { group: rig.options.group, topic: batch.topic, partition: batch.partition };
    const plan = planOffsets(batch.records, batch.failures);
    for (const slot of plan.slots) {
      const where = `${tp}@${slot.offset}`;
      if (reported.has(where)) continue;
      const copies = writtenAt.get(where) ?? [];
      if (slot.conflict !== undefined) {
        assert.ok(copies.filter((c) => c.reason === 'duplicate-offset').length === slot.conflict.length, `${where}: every differing version dead-lettered`);
      } else if (slot.failure !== undefined) {
        assert.ok(copies.some((c) => c.reason === 'malformed'), `${where}: malformed record dead-lettered`);
      } else if (!rig.ran.has(where) && copies.length === 0) {
        const lane = laneIdOf(slot.record!, rig.options);
        const parked = lane === undefined ? [] : await redis.lrange(parkKey(ref, lane), 0, -1);
        assert.ok(parked.some((entry) => entry.startsWith(`${slot.offset}:`)), `${where}: neither ran, parked, handed off nor reported back`);
      }
    }
    const unplacedCopies = writtenAt.get(`${tp}@unknown`) ?? [];
    assert.ok(unplacedCopies.length >= plan.unplaced.length, `${tp}: ${plan.unplaced.length} records without an offset, ${unplacedCopies.length} dead-lettered`);
  }
  return 'processed';
}
