import { CompletionStore } from '../../src/completion/store';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { OUTPUT_HEADER } from '../../src/lanes/effects';
import { parseOutputId } from '../../src/engine/outputs';
import { resolveOptions } from '../../src/options';
import { LanesFunction, type LanesRecord } from '../../src/handler/lanes-function';
import { createTelemetry } from '../../src/telemetry';
import { contextWithin, eventOf, fetchRecords, produce } from './support/kafka-events';
import { createKafka, createTopic, REDIS_URL, uniqueName } from './support/stack';
import { spawnWorker } from './support/worker-process';
import { stageOneHandler, stageSink } from './support/stage-worker';

process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const RECORDS = 300;
const KEYS = 30;
const CONCURRENCY = 20;

/** Runs stage 1 in a child process and SIGKILLs it once `killAfter` handlers returned; what it printed. */
async function killedStageOne(eventFile: string, options: object, out: string, killAfter: number): Promise<{ steps: number[]; ran: number[] }> {
  const child = spawnWorker(join(__dirname, 'support', 'stage-worker.ts'), [eventFile, JSON.stringify(options), out]);
  const steps: number[] = [];
  const ran: number[] = [];
  let buffered = '';
  await new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', () => resolve());
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        if (line.startsWith('step ')) steps.push(Number(line.slice(5)));
        if (line.startsWith('ran ')) ran.push(Number(line.slice(4)));
      }
      if (ran.length >= killAfter && child.exitCode === null) child.kill('SIGKILL');
    });
  });
  return { steps, ran };
}

describe('two kafka-lanes stages: stage 1 sends, stage 2 drops repeats', () => {
  it('stage 2 runs each output once, in per-key order, though stage 1 was killed and ran again', async () => {
    // Prepare: stage 1 reads `source` and sends one output per record to `middle`; stage 2 reads `middle`.
    const [source, middle, groupOne, groupTwo] = [uniqueName('src'), uniqueName('mid'), uniqueName('one'), uniqueName('two')];
    await Promise.all([createTopic(source, 1), createTopic(middle, 2), ...[groupOne, groupTwo].flatMap((g) => [`${g}.retry.1s`, `${g}.dlq`].map((t) => createTopic(t, 1)))]);
    await produce(source, Array.from({ length: RECORDS }, (_, i) => ({ key: `k${i % KEYS}`, value: JSON.stringify({ key: `k${i % KEYS}`, seq: Math.floor(i / KEYS) }) })));
    const event = eventOf(await fetchRecords(source, RECORDS));
    const dir = mkdtempSync(join(tmpdir(), 'kl-stages-'));
    writeFileSync(join(dir, 'event.json'), JSON.stringify(event));
    // Done bits wait for the end of the batch: everything the killed process ran runs again when redelivered.
    const optionsOne = { group: groupOne, concurrency: CONCURRENCY, flushIntervalMs: 600_000, retry: { tiers: ['1s'] } };
    const redis = new Redis(REDIS_URL);
    const sinkOne = stageSink(groupOne);
    const sinkTwo = stageSink(groupTwo);

    try {
      // Act: stage 1 killed twice mid-batch, then the event source's redelivery runs it to the end.
      const first = await killedStageOne(join(dir, 'event.json'), optionsOne, middle, RECORDS / 3);
      const second = await killedStageOne(join(dir, 'event.json'), optionsOne, middle, RECORDS / 3);
      const stepsInParent: number[] = [];
      const stageOne = new LanesFunction({
        options: resolveOptions(optionsOne, {}),
        handler: stageOneHandler(middle, (offset) => stepsInParent.push(offset)) as never,
        store: new CompletionStore(redis, resolveOptions(optionsOne, {}).caps), handOff: () => sinkOne, telemetry: createTelemetry(groupOne),
      });
      expect((await stageOne.process(event, contextWithin(120_000))).batchItemFailures).toEqual([]);
      const admin = createKafka().admin();
      await admin.connect();
      const ends = await admin.fetchTopicOffsets(middle).finally(() => admin.disconnect());
      const produced = ends.reduce((sum, p) => sum + Number(p.high), 0);
      const outputs = await fetchRecords(middle, produced);
      const seen: Array<{ key: string; seq: number; id: string }> = [];
      const stageTwo = new LanesFunction({
        options: resolveOptions({ group: groupTwo, concurrency: CONCURRENCY, dedupeOutputs: true, retry: { tiers: ['1s'] } }, {}),
        handler: (async (record: LanesRecord) => {
          const value = record.value as { key: string; seq: number };
          const id = parseOutputId(String(record.headers.find((h) => h.name === OUTPUT_HEADER)?.value));
          seen.push({ key: value.key, seq: value.seq, id: `${id?.origin.topic}/${id?.origin.partition}/${id?.origin.offset}#${id?.index}` });
        }) as never,
        store: new CompletionStore(redis, resolveOptions({ group: groupTwo }, {}).caps), handOff: () => sinkTwo, telemetry: createTelemetry(groupTwo),
      });
      expect((await stageTwo.process(eventOf(outputs), contextWithin(120_000))).batchItemFailures).toEqual([]);

      // Assess: the kills made stage 1 send outputs twice, and stage 2 ran each once, in per-key order.
      expect(first.ran.length).toBeGreaterThanOrEqual(RECORDS / 3);
      expect(produced).toBeGreaterThan(RECORDS);
      expect(seen).toHaveLength(RECORDS);
      expect(new Set(seen.map((s) => s.id)).size).toBe(RECORDS);
      for (let k = 0; k < KEYS; k += 1) {
        expect(seen.filter((s) => s.key === `k${k}`).map((s) => s.seq)).toEqual(Array.from({ length: RECORDS / KEYS }, (_, i) => i));
      }
      // A step that completed in a killed process never ran again; only those cut off by a kill did (at most
      // one per record in flight).
      const ranBefore = new Set([...first.steps, ...second.steps]);
      const again = stepsInParent.filter((offset) => ranBefore.has(offset)).length + second.steps.filter((o) => first.steps.includes(o)).length;
      expect(again).toBeLessThanOrEqual(2 * CONCURRENCY);
      expect(new Set([...ranBefore, ...stepsInParent]).size).toBe(RECORDS);
    } finally {
      await Promise.all([sinkOne.close(), sinkTwo.close()]);
      redis.disconnect();
    }
  });
});
