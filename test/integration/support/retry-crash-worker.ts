/**
 * The retry function in a process of its own, for the crash test: runs the event in the file named by argv[2]
 * with the options in argv[3] (JSON) on the Redis setup argv[4], prints `start <offset> <attempt>` per handler
 * run, and stops dead at the step boundary named by argv[5], printing `at <step>`, until the test kills it.
 *
 * Handler rule (the test's too): attempt 1 of origin offsets 0 and 1 fails; every other run succeeds.
 */
import { readFileSync } from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';
import { CompletionStore } from '../../../src/completion';
import { HandOffWriter } from '../../../src/handoff';
import { resolveOptions, type LanesOptionsInput } from '../../../src/options';
import { LanesFunction } from '../../../src/handler/lanes-function';
import { createTelemetry } from '../../../src/telemetry';
import { KAFKA_BROKERS, redisSetups } from './stack';

process.env.POWERTOOLS_LOG_LEVEL = 'ERROR';
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

const step = process.argv[5];

/** Stops this process at a step boundary: nothing after it happens until the test kills the process. */
function stopHere(name: string): Promise<never> {
  process.stdout.write(`at ${name}\n`);
  return new Promise<never>(() => undefined);
}

const proto = CompletionStore.prototype;
const { laneHead, claimHead, release } = proto;
// The head check is a read before a copy waits for its due time, and a claim before it runs: stop after either.
proto.laneHead = async function (this: CompletionStore, ...args: Parameters<typeof laneHead>) {
  const head = await laneHead.apply(this, args);
  if (step === 'after-head-check') await stopHere(step);
  return head;
};
proto.claimHead = async function (this: CompletionStore, ...args: Parameters<typeof claimHead>) {
  const claim = await claimHead.apply(this, args);
  if (step === 'after-head-check') await stopHere(step);
  return claim;
};
proto.release = async function (this: CompletionStore, ...args: Parameters<typeof release>) {
  if (step === 'before-release') await stopHere(step);
  const next = await release.apply(this, args);
  if (step === 'after-release') await stopHere(step);
  return next;
};

async function main(): Promise<void> {
  const event: unknown = JSON.parse(readFileSync(process.argv[2]!, 'utf8'));
  const options = resolveOptions(JSON.parse(process.argv[3]!) as LanesOptionsInput, {});
  const writer = new HandOffWriter(new Kafka({ clientId: 'retry-crash-worker', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING }), { deadLetterTopic: `${options.group}.dlq` });
  const processor = new LanesFunction({
    options,
    handler: async (record, ctx) => {
      process.stdout.write(`start ${record.origin.offset} ${ctx.attempt}\n`);
      if (step === 'mid-drain' && record.origin.offset === 1) await stopHere(step);
      if (ctx.attempt === 1 && record.origin.offset <= 1) throw new Error('first attempt fails');
    },
    store: new CompletionStore(redisSetups().find((setup) => setup.name === process.argv[4])!.connect(), options.caps),
    handOff: () => ({
      write: async (items, opts) => {
        const outcomes = await writer.write(items, opts);
        if (step === 'after-tier-write' && items.some((item) => item.kind === 'retry')) await stopHere(step);
        return outcomes;
      },
    }),
    telemetry: createTelemetry(options.group),
  });
  await processor.process(event, { getRemainingTimeInMillis: () => 60_000 });
  process.stdout.write('finished\n');
  process.exit(0);
}

void main();
