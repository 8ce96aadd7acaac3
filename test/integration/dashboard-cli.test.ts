/**
 * `kafka-lanes dashboard` as an operator starts it, on Redis Cluster: it prints a URL with its token, serves the
 * group's blocked lanes through it, refuses requests without the token, and stops on Ctrl-C.
 */
import { applyReset, planReset } from '../../src/admin';
import { runCli } from '../../src/cli/main';
import { CompletionStore, type RedisClient } from '../../src/completion';
import { REDIS_CLUSTER_NODES, redisSetups, uniqueName } from './support/stack';

jest.setTimeout(120_000);

describe('kafka-lanes dashboard (the command) on Redis Cluster', () => {
  const group = uniqueName('dcli');
  const topic = uniqueName('orders');
  let redis: RedisClient;

  beforeAll(async () => {
    redis = redisSetups().find((setup) => setup.name === 'cluster')!.connect();
    const store = new CompletionStore(redis);
    const ref = { group, topic, partition: 2 };
    await store.admit(ref, [{ offset: 0, lane: Buffer.from('cust-1').toString('base64') }, { offset: 1, lane: Buffer.from('cust-1').toString('base64') }]);
    await store.block(ref, { head: { lane: Buffer.from('cust-1').toString('base64'), offset: 0, attempt: 3, state: 'retrying' }, parked: [{ offset: 1, payload: 'p' }] });
  });

  afterAll(async () => {
    await applyReset(new CompletionStore(redis), await planReset(new CompletionStore(redis), { group, topic }));
    await redis.quit();
  });

  it('prints a URL with its token, serves the lanes through it, refuses a request without it, stops on Ctrl-C', async () => {
    // Prepare
    let out = '';
    const stdout = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((out += String(chunk)), true));
    const nodes = REDIS_CLUSTER_NODES.map((node) => `${node.host}:${node.port}`).join(',');
    try {
      // Act
      const exited = runCli(['node', 'kafka-lanes', 'dashboard', group, '--redis-cluster-nodes', nodes, '--interval', '0.5']);
      let url: string | undefined;
      while (url === undefined) {
        url = /open (http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+)/.exec(out)?.[1];
        if (url === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const token = new URL(url).searchParams.get('token')!;
      const lanes = await fetch(url.replace('/?token=', '/api/lanes?token='));
      const page = await fetch(url);
      const refused = await fetch(url.replace(/\?token=.*/, 'api/lanes'));
      process.emit('SIGINT');
      const code = await exited;

      // Assess
      expect(out).toContain(`kafka-lanes dashboard of ${group} (read only): open http://127.0.0.1:`);
      expect(lanes.status).toBe(200);
      const body = (await lanes.json()) as { total: number; lanes: Array<{ key: string; attempt: number; parked: number; partition: number }> };
      expect(body.total).toBe(1);
      expect(body.lanes[0]).toMatchObject({ key: 'cust-1', attempt: 3, parked: 1, partition: 2 });
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
      const html = await page.text();
      expect(html).toContain('<div id="app">');
      expect(html).not.toContain(token);
      expect(refused.status).toBe(401);
      expect(code).toBe(0);
    } finally {
      stdout.mockRestore();
    }
  });

  it('refuses a bad --port before connecting to anything', async () => {
    let err = '';
    const stderr = jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((err += String(chunk)), true));
    try {
      expect(await runCli(['node', 'kafka-lanes', 'dashboard', group, '--port', '70000'])).toBe(1);
    } finally {
      stderr.mockRestore();
    }
    expect(err).toContain('Expected `--port` to be a port number from 0 to 65535, got `70000`');
  });
});
