import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Admin, Consumer } from 'kafkajs';
import { ensureTopics } from '../../../src/admin';
import { runCliCaptured as cli } from '../support/cli';
import { createKafka, createTopic, deleteTopics, KAFKA_BROKERS, REDIS_URL, uniqueName } from '../support/stack';

const ROOT = join(__dirname, '..', '..', '..');
const created: string[] = [];

/** The table's row for a check: `FAIL  topic x.retry.5s  ...`. */
function row(out: string, name: string): string {
  const line = out.split('\n').find((text) => text.slice(6).startsWith(`${name} `));
  if (line === undefined) throw new Error(`Expected a row \`${name}\` in:\n${out}`);
  return line;
}

/** A port on 127.0.0.1 nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('Expected a TCP address');
  return address.port;
}

describe('kafka-lanes doctor on the local stack', () => {
  let admin: Admin;
  const connection = ['--brokers', KAFKA_BROKERS.join(','), '--redis-url', REDIS_URL];

  beforeAll(async () => {
    admin = createKafka().admin();
    await admin.connect();
  });

  afterAll(async () => {
    await admin.disconnect();
    await deleteTopics(created);
  });

  it('passes every check of a group whose topics `topics ensure` created, through the real CLI (exit 0)', async () => {
    // Prepare
    const group = uniqueName('doctor-ok');
    const source = uniqueName('orders');
    created.push(source, `${group}.retry.1s`, `${group}.retry.5s`, `${group}.dlq`);
    await ensureTopics(admin, { group, topics: [{ topic: source, partitions: 2 }], tiers: ['1s', '5s'] });
    // The committer's completion group has committed the source topic: its own topic, so no conflict.
    await admin.setOffsets({ groupId: `${group}.lanes`, topic: source, partitions: [{ partition: 0, offset: '0' }] });

    // Act: the process exits 0, or execFile rejects.
    const { stdout } = await promisify(execFile)('npx', ['tsx', 'src/cli/bin.ts', 'doctor', group, '--tiers', '1s,5s', ...connection], {
      cwd: ROOT,
      env: { ...process.env, KAFKA_LANES_TOPICS: source },
    });

    // Assess
    const rows = stdout.split('\n').slice(1, -2);
    expect(rows.map((line) => line.slice(0, 4).trim())).toEqual(Array(rows.length).fill('OK'));
    expect(row(stdout, 'brokers')).toContain('1 reachable (127.0.0.1:');
    expect(row(stdout, `topic ${source}`)).toContain('source, 2 partitions');
    expect(row(stdout, `topic ${group}.retry.5s`)).toContain('2 partitions, retention.ms=604800000 (7d)');
    expect(row(stdout, `topic ${group}.dlq`)).toContain('dead-letter');
    expect(row(stdout, 'redis')).toMatch(/PING round trip [0-9.]+ ms/);
    expect(row(stdout, 'maxmemory-policy')).toContain('`noeviction`');
    expect(row(stdout, 'redis mode')).toContain('standalone, as configured');
    expect(row(stdout, `group ${group}`)).toContain(`source trigger group: checked that its committed offsets and its members' subscriptions name only \`${source}\`: not in use yet`);
    expect(row(stdout, `group ${group}.retry.5s`)).toContain(`name only \`${group}.retry.5s\``);
    expect(row(stdout, `group ${group}.lanes`)).toContain(`and that it has no member: offsets for \`${source}\`, 0 member(s)`);
  });

  describe('a group whose group ids another consumer uses', () => {
    const group = uniqueName('doctor-shared');
    const source = uniqueName('orders');
    const other = uniqueName('payments');
    const consumers: Consumer[] = [];
    let run: { code: number; out: string; err: string };

    /** A consumer of `topics` that has joined `groupId` (it stays a member until the end). */
    async function joined(groupId: string, topic: string): Promise<void> {
      const consumer = createKafka(`other-app-${groupId}`).consumer({ groupId, maxWaitTimeInMs: 100 });
      consumers.push(consumer);
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      const join = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
      await consumer.run({ eachMessage: async () => undefined });
      await join;
    }

    beforeAll(async () => {
      created.push(source, other, `${group}.retry.1s`, `${group}.dlq`);
      await ensureTopics(admin, { group, topics: [{ topic: source, partitions: 1 }], tiers: ['1s'] });
      await createTopic(other, 1);
      // Another application committed offsets under the source group id, and another one is a live member of the
      // retry tier's group id on its own topic; something joined the completion group, which has no members.
      await admin.setOffsets({ groupId: group, topic: other, partitions: [{ partition: 0, offset: '0' }] });
      await joined(`${group}.retry.1s`, other);
      await joined(`${group}.lanes`, source);
      run = await cli('doctor', group, '--topic', source, '--tiers', '1s', ...connection);
    });

    afterAll(async () => {
      for (const consumer of consumers) await consumer.disconnect();
    });

    it('fails the source group id, naming the other topic it has committed offsets for, and exits 1', () => {
      expect(run.code).toBe(1);
      expect(row(run.out, `group ${group}`)).toMatch(new RegExp(`^FAIL .*but it has committed offsets for \`${other}\`: another consumer uses this group id`));
      expect(run.err).toContain(`group ${group}`);
    });

    it('fails the retry group id, naming the member and the topic it subscribes to', () => {
      expect(row(run.out, `group ${group}.retry.1s`)).toMatch(new RegExp(`^FAIL .*member \`other-app-${group}\\.retry\\.1s\` from \\S+ subscribes to \`${other}\``));
    });

    it('fails the completion group, which something joined', () => {
      expect(row(run.out, `group ${group}.lanes`)).toMatch(new RegExp(`^FAIL .*member \`other-app-${group}\\.lanes\` from \\S+ joined it`));
    });
  });

  describe('a group with a missing retry topic and one that keeps records less than the longest tier', () => {
    const group = uniqueName('doctor-bad');
    const source = uniqueName('orders');
    let run: { code: number; out: string; err: string };

    beforeAll(async () => {
      created.push(source, `${group}.retry.1s`, `${group}.retry.5s`, `${group}.retry.1m`, `${group}.dlq`);
      await ensureTopics(admin, { group, topics: [{ topic: source, partitions: 1 }], tiers: ['1s'] });
      await createTopic(`${group}.retry.1m`, 1, { 'retention.ms': '30000' });
      run = await cli('doctor', group, '--topic', source, '--tiers', '1s,5s,1m', ...connection);
    });

    it('fails the missing topic, naming it, and exits 1', () => {
      expect(run.code).toBe(1);
      expect(row(run.out, `topic ${group}.retry.5s`)).toMatch(new RegExp(`^FAIL .*\`${group}\\.retry\\.5s\` does not exist`));
      expect(run.err).toContain(`topic ${group}.retry.5s`);
      expect(row(run.out, `topic ${group}.retry.1s`)).toMatch(/^OK /);
    });

    it('fails the short retention, saying the retention and the longest tier', () => {
      const line = row(run.out, `topic ${group}.retry.1m`);
      expect(line).toMatch(/^FAIL /);
      expect(line).toContain('retention.ms=30000 (30s)');
      expect(line).toContain('longest retry tier `1m` (60000 ms)');
    });
  });

  it('fails the broker row with the connection error when no broker listens, and checks no topic', async () => {
    // Prepare
    const port = await closedPort();

    // Act
    const { code, out } = await cli('doctor', uniqueName('doctor-down'), '--brokers', `127.0.0.1:${port}`, '--redis-url', REDIS_URL);

    // Assess
    expect(code).toBe(1);
    expect(row(out, 'brokers')).toMatch(new RegExp(`^FAIL .*not reachable with no TLS, no SASL: connection refused \\(nothing listens there\\) at 127\\.0\\.0\\.1:${port}$`));
    expect(out).not.toContain('topic ');
    expect(row(out, 'redis')).toMatch(/^OK /);
  });

  it('reads the connections and tiers from a deployed function\'s environment saved with `aws lambda get-function-configuration`', async () => {
    // Prepare: the file names a broker nobody listens on and tiers the shell does not know.
    const port = await closedPort();
    const file = join(mkdtempSync(join(tmpdir(), 'doctor-')), 'fn.json');
    writeFileSync(file, JSON.stringify({
      FunctionName: 'orders-prod-process',
      Environment: { Variables: { KAFKA_LANES_BROKERS: `127.0.0.1:${port}`, KAFKA_LANES_REDIS_URL: REDIS_URL, KAFKA_LANES_RETRY_TIERS: '1s,5s' } },
    }));
    const group = uniqueName('doctor-file');
    const source = uniqueName('orders');
    created.push(source, `${group}.retry.1s`, `${group}.retry.5s`, `${group}.dlq`);
    await ensureTopics(admin, { group, topics: [{ topic: source, partitions: 1 }], tiers: ['1s', '5s'] });

    // Act
    const down = await cli('doctor', group, '--env-file', file);
    writeFileSync(file, JSON.stringify({ Environment: { Variables: { KAFKA_LANES_BROKERS: KAFKA_BROKERS.join(','), KAFKA_LANES_REDIS_URL: REDIS_URL, KAFKA_LANES_RETRY_TIERS: '1s,5s' } } }));
    const up = await cli('doctor', group, '--env-file', file);

    // Assess
    expect(down.code).toBe(1);
    expect(row(down.out, 'brokers')).toMatch(new RegExp(`^FAIL .*connection refused \\(nothing listens there\\) at 127\\.0\\.0\\.1:${port}`));
    expect(row(up.out, `topic ${group}.retry.5s`)).toMatch(/^OK .*retry tier 5s/);
    expect(row(up.out, `group ${group}.retry.5s`)).toMatch(/^OK /);
  });

  it('fails the Redis mode when one server is configured but the node is a cluster member', async () => {
    const { code, out } = await cli('doctor', uniqueName('doctor-mode'), '--brokers', KAFKA_BROKERS.join(','), '--redis-url', 'redis://127.0.0.1:7000');

    expect(code).toBe(1);
    expect(row(out, 'redis mode')).toMatch(/^FAIL .*configured for one Redis server .*cluster_enabled:1/);
  });

  it('fails the Redis row when nothing listens at the configured URL', async () => {
    const port = await closedPort();

    const { code, out } = await cli('doctor', uniqueName('doctor-noredis'), '--brokers', KAFKA_BROKERS.join(','), '--redis-url', `redis://127.0.0.1:${port}`);

    expect(code).toBe(1);
    // ioredis tells the command only `Connection is closed.`; the row names what the socket said.
    expect(row(out, 'redis')).toMatch(new RegExp(`^FAIL .*not reachable with no TLS, no AUTH: connection refused \\(nothing listens there\\) at 127\\.0\\.0\\.1:${port}$`));
  });

  it('names a refused Redis port in the other commands too', async () => {
    const port = await closedPort();

    const { code, err } = await cli('status', uniqueName('status-noredis'), '--brokers', KAFKA_BROKERS.join(','), '--redis-url', `redis://127.0.0.1:${port}`);

    expect(code).toBe(1);
    expect(err).toBe(`kafka-lanes: Redis (127.0.0.1:${port}) not reachable: connection refused (nothing listens there) at 127.0.0.1:${port}\n`);
  });
});
