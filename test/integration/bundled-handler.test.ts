import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import type { Cluster, Redis } from 'ioredis';
import type { KafkaBatchResponse } from '../../src';
import { CompletionStore } from '../../src/completion';
import { readHandOffHeaders } from '../../src/handoff/headers';
import { BUNDLE_DIR, BUNDLE_EXTENSION, bundleHandlers } from '../../src/serverless/bundle';
import { eventOf, fetchRecords, produce } from './support/kafka-events';
import { createTopic, deleteTopics, REDIS_CLUSTER_NODES, REDIS_URL, redisSetups, uniqueName } from './support/stack';

const text = (bytes: Uint8Array | null | undefined): string | undefined =>
  bytes === null || bytes === undefined ? undefined : Buffer.from(bytes).toString('utf8');

const FIXTURE = join(__dirname, '..', 'fixtures', 'bundled-handler');

/** What the runner prints: the handler's response and the values it ran. */
interface RunOutput {
  readonly response: KafkaBatchResponse;
  readonly ran: string[];
}

/**
 * The two ways a handler gets bundled: by the serverless plugin (ES modules with splitting, the parts needed later
 * in chunks of their own) and by a user's own esbuild (one CommonJS file, minified, as serverless-esbuild does).
 */
const BUNDLINGS = [
  {
    name: "the serverless plugin's ES modules with splitting",
    bundle: async (outDir: string): Promise<string> => {
      const handlers = await bundleHandlers(outDir, [{ key: 'handler', entryFile: join(FIXTURE, 'handler.ts'), exportName: 'handler', outName: 'handler' }]);
      expect(handlers.get('handler')).toBe(`${BUNDLE_DIR}/handler.handler`);
      return join(outDir, BUNDLE_DIR, `handler${BUNDLE_EXTENSION}`);
    },
  },
  {
    name: 'a minified CommonJS file',
    bundle: async (outDir: string): Promise<string> => {
      const bundle = join(outDir, 'handler.js');
      await build({ entryPoints: [join(FIXTURE, 'handler.ts')], outfile: bundle, bundle: true, platform: 'node', target: 'node22', format: 'cjs', minify: true, logLevel: 'silent' });
      return bundle;
    },
  },
];

describe.each(BUNDLINGS)('a handler bundled with esbuild: $name', ({ bundle: bundleInto }) => {
  let outDir: string;
  let bundle: string;

  beforeAll(async () => {
    // Prepare: the bundle alone in a directory far from src/, as in a Lambda package: nothing of the
    // framework can be read from beside it.
    outDir = mkdtempSync(join(tmpdir(), 'kafka-lanes-bundle-'));
    bundle = await bundleInto(outDir);
  });

  afterAll(() => {
    rmSync(outDir, { recursive: true, force: true });
  });

  describe.each(redisSetups())('on $name Redis', ({ name, connect }) => {
    let redis: Redis | Cluster;
    const topics: string[] = [];
    beforeAll(() => {
      redis = connect();
    });
    afterAll(async () => {
      await redis.quit();
      await deleteTopics(topics);
    });

    it('runs every record, sets their done bits and hands the failing one to the retry topic', async () => {
      // Prepare
      const group = uniqueName('bundle');
      const topic = uniqueName('src');
      const tiers = ['5s', '1m', '10m'].map((tier) => `${group}.retry.${tier}`);
      topics.push(topic, ...tiers, `${group}.dlq`);
      await createTopic(topic, 1);
      await Promise.all([...tiers, `${group}.dlq`].map((t) => createTopic(t, 1)));
      const values = ['ok-1', 'ok-2', 'fail-3', 'ok-4', 'ok-5'];
      await produce(topic, values.map((value, i) => ({ key: `k${i}`, value })));
      const records = await fetchRecords(topic, values.length);
      const eventFile = join(outDir, `${group}.json`);
      writeFileSync(eventFile, JSON.stringify(eventOf(records)));
      const redisEnv =
        name === 'standalone'
          ? { KAFKA_LANES_REDIS_URL: REDIS_URL }
          : { KAFKA_LANES_REDIS_CLUSTER_NODES: REDIS_CLUSTER_NODES.map((n) => `${n.host}:${n.port}`).join(',') };

      // Act: a fresh Node.js process loads the bundle, as the Lambda runtime does.
      const { stdout } = await promisify(execFile)(process.execPath, [join(FIXTURE, 'run.mjs'), bundle, eventFile], {
        env: {
          PATH: process.env.PATH,
          KAFKA_LANES_GROUP: group,
          ...redisEnv,
          POWERTOOLS_LOG_LEVEL: 'SILENT',
          POWERTOOLS_METRICS_DISABLED: 'true',
        },
        timeout: 90_000,
      });
      const output = JSON.parse(stdout) as RunOutput;

      // Assess: every record ran once, and nothing is reported back to the event source.
      expect(output.response).toEqual({ batchItemFailures: [] });
      expect([...output.ran].sort()).toEqual([...values].sort());
      // Every done bit is set: the frontier is past the last offset.
      const last = records[records.length - 1]!.offset;
      const reading = await new CompletionStore(redis).frontier({ group, topic, partition: 0 });
      expect(reading).toMatchObject({ frontier: last + 1, highest: last });
      // The failing record is in the first retry tier, carrying its origin and its next attempt.
      const [copy] = await fetchRecords(tiers[0]!, 1);
      const headers = readHandOffHeaders(copy!.headers ?? []);
      expect({ key: text(copy!.key), value: text(copy!.value), headers }).toMatchObject({
        key: 'k2',
        value: 'fail-3',
        headers: { originTopic: topic, originPartition: 0, originOffset: records[2]!.offset, kind: 'retry', attempt: 2 },
      });
      expect(headers.errorMessage).toBe('refused fail-3');
    });
  });
});
