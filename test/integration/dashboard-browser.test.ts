/**
 * The dashboard in a real browser (chromium driven by playwright-core: see support/browser.ts) on the local Kafka and Redis:
 * failing records block a lane, the page shows it with its key and attempt, a release from the page frees it
 * and the page follows; after Redis loses the group's state the committer's recovery shows on its partition, and a
 * banner shows while a partition is fenced for one; the access token is required. A screenshot of each state is written under
 * test-output/dashboard/ for a person to look at.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { scanKeys } from '../../src/completion/redis-scan';
import { MemberlessOffsetCommitter, runCommitter } from '../../src/committer';
import { escapeName, partitionKeys } from '../../src/completion';
import { PartitionRebuild } from '../../src/completion/rebuild';
import { CompletionStore } from '../../src/completion/store';
import { startDashboard, type Dashboard } from '../../src/dashboard';
import { createTelemetry } from '../../src/telemetry';
import { HandOffWriter } from '../../src/handoff';
import { resolveOptions, type LanesOptions, type LanesOptionsInput } from '../../src/options';
import { LanesFunction } from '../../src/handler/lanes-function';
import { browserLaunchOptions } from './support/browser';
import { runCliCaptured } from './support/cli';
import { contextWithin, eventOf, fetchRecords, produce } from './support/kafka-events';
import { RetryFeed } from './support/retry-feed';
import { createKafka, createTopic, KAFKA_BROKERS, REDIS_URL, uniqueName } from './support/stack';

jest.setTimeout(240_000);
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const OUTPUT = join(__dirname, '..', '..', 'test-output', 'dashboard');
const TIERS = ['1s', '1m'];

describe('kafka-lanes dashboard in a browser', () => {
  const group = uniqueName('dgrp');
  const topic = uniqueName('dsrc');
  const key = 'customer-7';
  const lane = Buffer.from(key).toString('base64');
  const logged: string[] = [];
  let browser: Browser;
  let page: Page;
  let dashboard: Dashboard;
  let redis: Redis;
  let kafka: Kafka;
  let writer: HandOffWriter;
  let feed: RetryFeed;
  let processor: LanesFunction;
  let options: LanesOptions;
  let broken = true;
  const runs: Array<{ offset: number; attempt: number }> = [];
  const cleanups: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    mkdirSync(OUTPUT, { recursive: true });
    await createTopic(topic, 1);
    await Promise.all([...TIERS.map((t) => `${group}.retry.${t}`), `${group}.dlq`].map((t) => createTopic(t, 1)));
    options = resolveOptions(
      { group, flushIntervalMs: 20, deadLetter: { policy: 'hold' }, retry: { tiers: TIERS, maxAttempts: 2, backoff: { type: 'fixed', delayMs: 200 } } } as LanesOptionsInput,
      {},
    );
    // Each resource's cleanup is registered as soon as it exists: a set-up failing half-way (no browser, say)
    // must not leave a dashboard reading Kafka, consumers or connections open, or jest never exits.
    redis = new Redis(REDIS_URL);
    cleanups.push(async () => redis.disconnect());
    kafka = new Kafka({ clientId: 'dashboard-test', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING });
    writer = new HandOffWriter(kafka, { deadLetterTopic: `${group}.dlq` });
    cleanups.push(() => writer.disconnect());
    const producer = kafka.producer();
    cleanups.push(() => producer.disconnect());
    await producer.connect();
    const admin = kafka.admin();
    cleanups.push(() => admin.disconnect());
    await admin.connect();
    processor = new LanesFunction({
      options, store: new CompletionStore(redis, options.caps), handOff: () => writer, telemetry: createTelemetry(group),
      handler: (record, ctx) => {
        runs.push({ offset: record.origin.offset, attempt: ctx.attempt });
        if (broken && record.origin.offset === 0) throw new Error('payment system unavailable');
      },
    });
    feed = await RetryFeed.start(TIERS.map((t) => `${group}.retry.${t}`));
    cleanups.push(() => feed.stop());
    dashboard = await startDashboard({
      group, admin, store: new CompletionStore(redis), kafka, readEveryMs: 300, log: (line) => logged.push(line),
      operator: { options, store: new CompletionStore(redis), sink: writer, producer },
    });
    cleanups.push(() => dashboard.close());
    browser = await chromium.launch(await browserLaunchOptions());
    cleanups.push(() => browser.close());
    page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
    // Every action asks first; the operator says yes.
    page.on('dialog', (dialog) => void dialog.accept());
  });

  afterAll(async () => {
    // The last made is closed first: the browser, then the dashboard, then what it reads through.
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  });

  it('refuses a request without the access token', async () => {
    // Act
    const response = await page.goto(dashboard.url.replace(/\?token=.*/, ''));

    // Assess
    expect(response?.status()).toBe(401);
    expect(await page.textContent('body')).toContain('Expected the access token');
    await page.screenshot({ path: join(OUTPUT, '0-no-token.png') });
    const withWrongToken = await page.request.get(`${dashboard.url}x`.replace('/?', '/api/status?'));
    expect(withWrongToken.status()).toBe(401);
  });

  it('shows a lane blocked by failing records, with its key and attempt', async () => {
    // Prepare: the head of customer-7 fails twice (attempt 1, then its retry) and is held; its follower is parked.
    await produce(topic, [{ key, value: '{"order":1}' }, { key, value: '{"order":2}' }, { key: 'customer-8', value: '{"order":3}' }]);
    await processor.process(eventOf(await fetchRecords(topic, 3)), contextWithin(60_000));
    const heldHead = async (): Promise<boolean> => /\|held\|/.test((await redis.hget(partitionKeys({ group, topic, partition: 0 }).lanes, lane)) ?? '');
    await feed.feedUntil((event, context) => processor.process(event, context), heldHead);

    // Act
    await page.goto(dashboard.url);

    // Assess
    const row = page.locator(`[data-testid="lanes"] tr[data-lane="${lane}"]`);
    await row.waitFor();
    await page.getByText('payment system unavailable').first().waitFor();
    expect(await row.locator('td.key').textContent()).toBe(key);
    expect(await row.locator('td.attempt').textContent()).toBe('2');
    expect(await row.locator('.state').textContent()).toBe('held');
    expect(await page.getByTestId('actions').textContent()).toBe('actions on');
    expect(runs.filter((r) => r.offset !== 2)).toEqual([{ offset: 0, attempt: 1 }, { offset: 0, attempt: 2 }]);
    await page.screenshot({ path: join(OUTPUT, '1-lane-held.png'), fullPage: true });
  });

  it('lists the dead letter with its reason, origin, key, error and value, and filters by key', async () => {
    // Act
    const letters = page.getByTestId('dead-letters');
    await page.getByLabel('lane').fill('customer-8');
    await letters.locator('tbody tr').first().waitFor({ state: 'detached' });
    await page.getByLabel('lane').fill(key);
    const row = letters.locator('tbody tr').first();
    await row.waitFor();

    // Assess
    expect(await row.locator('td').allTextContents()).toEqual([
      '', expect.any(String), 'attempts-exhausted', `${topic}-0@0`, key, '2', 'Error: payment system unavailable', '{"order":1}',
    ]);
    await page.screenshot({ path: join(OUTPUT, '2-dead-letter-filtered.png'), fullPage: true });
    await page.getByLabel('lane').fill('');
  });

  it('releases the held lane from the page; the lane resumes in order and the page shows it free', async () => {
    // Act
    broken = false;
    await page.locator(`[data-testid="lanes"] tr[data-lane="${lane}"] button`).click();
    await page.getByTestId('action-log').getByText('done').waitFor();
    await feed.feedUntil((event, context) => processor.process(event, context), () => runs.some((r) => r.offset === 1));
    await page.getByTestId('no-lanes').waitFor();
    await page.locator('[data-testid="blocked-total"] .value', { hasText: /^0$/ }).waitFor();

    // Assess
    expect(runs.filter((r) => r.offset !== 2).map((r) => r.offset)).toEqual([0, 0, 1]);
    expect(await redis.hlen(partitionKeys({ group, topic, partition: 0 }).lanes)).toBe(0);
    expect(logged.some((line) => line.startsWith(`dashboard action: lane release ${group} ${topic} 0 ${lane}: held head 0 skipped`))).toBe(true);
    expect(await page.getByTestId('lanes-total').textContent()).toBe('0');
    await page.screenshot({ path: join(OUTPUT, '3-lane-released.png'), fullPage: true });
  });

  it('refuses an action without the page\'s CSRF token, and bad query input with a 400', async () => {
    // Act
    const token = new URL(dashboard.url).searchParams.get('token')!;
    const forged = await page.request.post(dashboard.url.replace(/\/\?token=.*/, '/api/lanes/release'), {
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      data: { topic, partition: 0, lane, confirmed: true },
    });
    const bad = await page.request.get(dashboard.url.replace('/?', '/api/lanes?limit=-5&'));

    // Assess
    expect(forged.status()).toBe(403);
    expect(bad.status()).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/`limit` to be an integer from 1 to 500/);
    expect(JSON.stringify(await (await page.request.get(dashboard.url.replace('/?', '/api/config?'))).json())).not.toContain(token);
  });

  it('shows a partition recovered from Kafka after Redis lost its state, and a banner while one is fenced for a recovery', async () => {
    // Prepare: a committer run leaves its durable marker; then Redis loses every key of the group.
    const commit = () =>
      runCommitter({
        store: processor.store,
        group,
        committer: new MemberlessOffsetCommitter(createKafka(), group),
        redrive: { store: processor.store, options, sink: writer },
        recovery: { parts: { store: new CompletionStore(redis), kafka, options, sink: writer } },
      });
    await commit();
    const escaped = escapeName(group);
    for (const stale of [...(await scanKeys(redis, `{kl:${escaped}:*`)), ...(await scanKeys(redis, `{kl:${escaped}}*`))]) await redis.del(stale);

    // Act: the next committer run finds the loss and recovers the partition from Kafka.
    const run = await commit();
    const row = page.locator(`[data-testid="partitions"] tr.partition`, { hasText: topic }).filter({ has: page.getByTestId('recovered') }).first();
    await row.waitFor();

    // Assess
    expect(run.losses).toEqual(expect.arrayContaining([expect.objectContaining({ topic, partition: 0, recovered: expect.objectContaining({ from: 3 }) })]));
    expect(await row.getByTestId('recovered').textContent()).toMatch(/^recovered 1× \(last at .+\)$/);
    expect(await page.getByTestId('recovering').count()).toBe(0);
    const cli = await runCliCaptured('status', group, '--redis-url', REDIS_URL);
    expect(cli.out).toMatch(new RegExp(`recovered from Kafka after Redis lost state: .*${topic}-0 1x \\(last at \\d{4}-\\d\\d-\\d\\dT`));
    await page.screenshot({ path: join(OUTPUT, '4-recovered.png'), fullPage: true });

    // Act: a recovery's first step, its fence, on the partition: records are refused until the recovery ends.
    await new PartitionRebuild(redis, { group, topic, partition: 0 }).fence(Date.now() + 120_000);

    // Assess
    const banner = page.getByTestId('recovering');
    await banner.waitFor();
    expect(await banner.textContent()).toContain(`Recovering from Kafka after Redis lost state: ${topic}-0.`);
    expect(await row.getByTestId('recovering-now').textContent()).toBe('recovering now');
    await page.screenshot({ path: join(OUTPUT, '5-recovering.png'), fullPage: true });
  });
});
