/**
 * Stage 1 of the two-stage test, in a process of its own so the test can SIGKILL it: reads an event from the file
 * named by argv[2] and runs it with `stageOneHandler` (a durable step, then one output per record to the topic in
 * argv[4]). Options come as JSON in argv[3]. Prints `step <offset>` when a step's function runs and `ran <offset>`
 * when a handler returns.
 */
import { CompletionStore } from '../../../src/completion/store';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { HandOffWriter } from '../../../src/handoff';
import { OutputWriter } from '../../../src/handoff/output-writer';
import { resolveOptions, type LanesOptionsInput } from '../../../src/options';
import { LanesFunction, type LanesContext, type LanesRecord } from '../../../src/handler/lanes-function';
import { createTelemetry } from '../../../src/telemetry';
import { KAFKA_BROKERS, REDIS_URL } from './stack';

/** Stage 1: a step that "charges" the record, then the record's one output, keyed like the record. */
export function stageOneHandler(out: string, onStep: (offset: number) => void) {
  return async (record: LanesRecord, ctx: LanesContext): Promise<void> => {
    const charge = await ctx.step('charge', async () => {
      onStep(record.origin.offset);
      await new Promise((resolve) => setTimeout(resolve, 2));
      return `ch-${record.origin.offset}`;
    });
    ctx.send(out, { key: record.rawKey, value: JSON.stringify({ ...(record.value as object), charge }) });
  };
}

/** The Kafka side of a stage: hand-off copies and outputs, one client. */
export function stageSink(group: string): { write: HandOffWriter['write']; send: OutputWriter['send']; close(): Promise<void> } {
  const kafka = new Kafka({ clientId: 'stage', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING });
  const handOff = new HandOffWriter(kafka, { deadLetterTopic: `${group}.dlq` });
  const outputs = new OutputWriter(kafka);
  return {
    write: handOff.write.bind(handOff),
    send: outputs.send.bind(outputs),
    close: async () => {
      await Promise.all([handOff.disconnect(), outputs.disconnect()]);
    },
  };
}

async function main(): Promise<void> {
  process.env.POWERTOOLS_LOG_LEVEL = 'ERROR';
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  const event: unknown = JSON.parse(readFileSync(process.argv[2]!, 'utf8'));
  const options = resolveOptions(JSON.parse(process.argv[3]!) as LanesOptionsInput, {});
  const sink = stageSink(options.group);
  const handler = stageOneHandler(process.argv[4]!, (offset) => process.stdout.write(`step ${offset}\n`));
  const processor = new LanesFunction({
    options,
    handler: async (record, ctx) => {
      await handler(record, ctx);
      process.stdout.write(`ran ${record.offset}\n`);
    },
    store: new CompletionStore(new Redis(REDIS_URL), options.caps),
    handOff: () => sink,
    telemetry: createTelemetry(options.group),
  });
  await processor.process(event, { getRemainingTimeInMillis: () => 600_000 });
  process.stdout.write('finished\n');
  process.exit(0);
}

// Run as a worker (its bundle, `stage-worker.cjs`: support/worker-process.ts), not when the test imports the handler.
if (/[/\\]stage-worker\.(ts|cjs)$/.test(process.argv[1] ?? '')) void main();
