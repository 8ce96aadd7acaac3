/**
 * `npm run fuzz [-- <runs> [<seed>]]`: the bad-input property of issue 6 with many more cases than the
 * integration suite runs, against the local stack (`npm run local:up`). Prints the seed, so a failure can be
 * replayed with `npm run fuzz -- <runs> <seed>`.
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { HandOffWriter } from '../../src/handoff';
import { createTopic, KAFKA_BROKERS, REDIS_URL, uniqueName } from '../integration/support/stack';
import { checkEvent, freshTopic, fuzzRig, mutatedEvent } from './bad-input-property';
import { deleteGroupKeys } from './stack';

process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

async function main(): Promise<void> {
  const runs = Number(process.argv[2] ?? 5_000);
  const seed = Number(process.argv[3] ?? Date.now() % 2 ** 31);
  const group = uniqueName('fuzz');
  const topics = [`${group}.retry.1s`, `${group}.retry.1m`, `${group}.dlq`];
  await Promise.all(topics.map((topic) => createTopic(topic, 1)));
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 3 });
  const writer = new HandOffWriter(new Kafka({ clientId: 'fuzz', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING }), { deadLetterTopic: `${group}.dlq` });
  const rig = fuzzRig(group, redis, writer);
  const outcomes = { 'decode-error': 0, processed: 0 };
  const started = performance.now();
  console.log(`bad-input fuzz: ${runs} events, seed ${seed}, group ${group}`);
  try {
    await fc.assert(
      fc.asyncProperty(mutatedEvent({ maxLargeValue: 3_000_000 }), async (build) => {
        outcomes[await checkEvent(rig, redis, build(freshTopic('fz')))] += 1;
      }),
      { numRuns: runs, seed, endOnFailure: true },
    );
  } finally {
    const seconds = (performance.now() - started) / 1000;
    console.log(`${outcomes.processed} events processed, ${outcomes['decode-error']} refused as a whole (EventDecodeError), ${((outcomes.processed + outcomes['decode-error']) / seconds).toFixed(1)} events/s`);
    await deleteGroupKeys(redis, group);
    await writer.disconnect();
    redis.disconnect();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
