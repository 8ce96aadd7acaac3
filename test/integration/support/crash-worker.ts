/**
 * A processor in a process of its own, for the crash test: reads an event from the file named by argv[2],
 * runs it with a slow handler and prints `ran <offset>` per finished record, until the test kills it.
 * Options come as JSON in argv[3], the Redis setup's name (`standalone` or `cluster`) in argv[4].
 */
import { CompletionStore } from '../../../src/completion/store';
import { readFileSync } from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';
import { HandOffWriter } from '../../../src/handoff';
import { resolveOptions, type LanesOptionsInput } from '../../../src/options';
import { LanesFunction } from '../../../src/handler/lanes-function';
import { createTelemetry } from '../../../src/telemetry';
import { KAFKA_BROKERS, redisSetups } from './stack';

process.env.POWERTOOLS_LOG_LEVEL = 'ERROR';
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

async function main(): Promise<void> {
  const event: unknown = JSON.parse(readFileSync(process.argv[2]!, 'utf8'));
  const options = resolveOptions(JSON.parse(process.argv[3]!) as LanesOptionsInput, {});
  const writer = new HandOffWriter(new Kafka({ clientId: 'crash-worker', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING }), {
    deadLetterTopic: `${options.group}.dlq`,
  });
  const processor = new LanesFunction({
    options,
    handler: async (record) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      process.stdout.write(`ran ${record.offset}\n`);
    },
    store: new CompletionStore(redisSetups().find((setup) => setup.name === process.argv[4])!.connect(), options.caps),
    handOff: () => writer,
    telemetry: createTelemetry(options.group),
  });
  process.stdout.write('ready\n');
  await processor.process(event, { getRemainingTimeInMillis: () => 600_000 });
  process.stdout.write('finished\n');
  process.exit(0);
}

void main();
