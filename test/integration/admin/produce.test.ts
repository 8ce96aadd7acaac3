import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCliCaptured } from '../support/cli';
import { fetchRecords } from '../support/kafka-events';
import { createTopic, deleteTopics, KAFKA_BROKERS, uniqueName } from '../support/stack';

const BROKERS = KAFKA_BROKERS.join(',');
const created: string[] = [];
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kl-produce-'));
});

afterAll(async () => {
  await deleteTopics(created);
  await rm(dir, { recursive: true, force: true });
});

async function topic(partitions: number): Promise<string> {
  const name = uniqueName('produce');
  await createTopic(name, partitions);
  created.push(name);
  return name;
}

describe('kafka-lanes produce', () => {
  it('writes value arguments as JSON with the key and headers given, and says where each landed', async () => {
    // Prepare
    const name = await topic(1);

    // Act
    const run = await runCliCaptured('produce', name, '{"orderId":"o-1","amount":30}', '{ "orderId": "o-2", "amount": 0 }', '--key', 'c-1', '--header', 'trace=t-1', '--brokers', BROKERS);

    // Assess
    expect(run).toMatchObject({ code: 0, err: '' });
    expect(run.out).toBe(`${name}-0@0 key c-1\n${name}-0@1 key c-1\n2 record(s) written to ${name} (acks=all)\n`);
    const records = await fetchRecords(name, 2);
    expect(records.map((r) => [String(r.key), String(r.value)])).toEqual([
      ['c-1', '{"orderId":"o-1","amount":30}'],
      ['c-1', '{"orderId":"o-2","amount":0}'],
    ]);
    expect(records[0]!.headers).toEqual([{ name: 'trace', value: Buffer.from('t-1') }]);
  });

  it('reads keyed lines from a file and keeps their order per key', async () => {
    const name = await topic(1);
    const file = join(dir, 'orders.txt');
    await writeFile(file, 'c-1|{"seq":1}\nc-2|{"seq":1}\n\nc-1|{"seq":2}\n');

    const run = await runCliCaptured('produce', name, '--file', file, '--key-separator', '|', '--brokers', BROKERS);

    expect(run.code).toBe(0);
    const records = await fetchRecords(name, 3);
    expect(records.map((r) => `${String(r.key)} ${String(r.value)}`)).toEqual([
      'c-1 {"seq":1}',
      'c-2 {"seq":1}',
      'c-1 {"seq":2}',
    ]);
  });

  it('refuses a value that is not JSON before connecting, naming it', async () => {
    const run = await runCliCaptured('produce', 'any-topic', '{orderId: o-1}', '--brokers', BROKERS);
    expect(run.code).toBe(1);
    expect(run.err).toMatch(/Expected JSON in argument 1, got `\{orderId: o-1\}`/);
  });

  it('names a refused broker connection as such', async () => {
    const run = await runCliCaptured('produce', 'any-topic', '1', '--brokers', '127.0.0.1:1');
    expect(run.code).toBe(1);
    expect(run.err).toBe('kafka-lanes: Kafka (127.0.0.1:1) not reachable: connection refused (nothing listens there) at 127.0.0.1:1\n');
  });
});
