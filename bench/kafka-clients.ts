/**
 * bench:kafka-clients — the Kafka clients side by side on the framework's own paths (docs/kafka-client.md). Each
 * round runs, for every client in turn (the order rotates from round to round), two processes of their own:
 *
 * - bench/steps.ts with `KAFKA_CLIENT` set, rows `1 output`, `no steps, unordered` and `1 hand-off, unordered`
 *   (RECORDS with no handler latency, LATENCY_RECORDS with a LATENCY_MS handler): the framework's output writer
 *   and hand-off writer on that client, and its producer alone on the `1 output` row's messages;
 * - bench/kafka-client/producer-alone.ts: the client's idempotent producer alone, 90-byte values and 3 headers,
 *   in sends of SENDS messages.
 *
 * Prints one figure per round and the median, per client. Figures only, no assertion. Needs the local Kafka and
 * Redis. `CLIENTS` picks clients (`;`-separated); @confluentinc/kafka-javascript runs only with CONFLUENT_KAFKA_DIR
 * (see bench/kafka-client/confluent.ts).
 *
 *   npm run bench:kafka-clients
 *   ROUNDS=1 RECORDS=5000 LATENCY_RECORDS=5000 npm run bench:kafka-clients   # a quick run
 *   CONFLUENT_KAFKA_DIR=/tmp/ckjs npm run bench:kafka-clients
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KAFKA_CLIENTS, type KafkaClientName } from './kafka-client';
import { median } from './support';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const RECORDS = process.env.RECORDS ?? '20000';
const LATENCY_RECORDS = process.env.LATENCY_RECORDS ?? '10000';
const LATENCY_MS = process.env.LATENCY_MS ?? '10';
const SENDS = process.env.SENDS ?? '32,128,512';
const CLIENTS: readonly KafkaClientName[] = process.env.CLIENTS === undefined
  ? KAFKA_CLIENTS.filter((name) => name !== '@confluentinc/kafka-javascript' || (process.env.CONFLUENT_KAFKA_DIR ?? '') !== '')
  : process.env.CLIENTS.split(';').map((name) => {
      const found = KAFKA_CLIENTS.find((known) => known === name.trim());
      if (found === undefined) throw new Error(`CLIENTS: expected names among ${KAFKA_CLIENTS.join(', ')}, got \`${name}\``);
      return found;
    });
const ROOT = join(__dirname, '..');

interface Row { recordsPerSecond: number; cpuPerRecord: number; ratio: number; extraCpu: number }
interface StepsFigures {
  noLatency: Record<string, Row>;
  latency?: Record<string, Row>;
  producer?: { cpuPerMessage: number; messagesPerSecond: number; perSend: number };
  handedOffExtraCpu?: number;
}
interface AloneFigures { perSend: number; cpuPerMessage: number; messagesPerSecond: number }

function runScript(script: string, env: Record<string, string>): string {
  const result = spawnSync(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 1 << 24 });
  if (result.status !== 0) throw new Error(`${script} (${JSON.stringify(env)}) failed: ${result.stderr || result.stdout}`);
  return result.stdout;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'kafka-clients-'));
  const steps = new Map<KafkaClientName, StepsFigures[]>(CLIENTS.map((c) => [c, []]));
  const alone = new Map<KafkaClientName, AloneFigures[][]>(CLIENTS.map((c) => [c, []]));
  for (let round = 0; round < ROUNDS; round += 1) {
    const order = CLIENTS.map((_, i) => CLIENTS[(i + round) % CLIENTS.length]!);
    for (const client of order) {
      const file = join(dir, `steps-${round}-${client.replace(/\W+/g, '-')}.json`);
      runScript('bench/steps.ts', {
        KAFKA_CLIENT: client,
        CONTENDERS: '1 output;no steps, unordered;1 hand-off, unordered',
        ROUNDS: '1',
        RECORDS,
        LATENCY_RECORDS,
        LATENCY_MS,
        FIGURES_JSON: file,
      });
      steps.get(client)!.push(JSON.parse(readFileSync(file, 'utf8')) as StepsFigures);
      const lines = runScript('bench/kafka-client/producer-alone.ts', { KAFKA_CLIENT: client, SENDS }).trim().split('\n');
      alone.get(client)!.push(lines.map((line) => JSON.parse(line) as AloneFigures));
      console.error(`round ${round + 1}/${ROUNDS}: ${client} done`);
    }
  }

  const cell = (values: readonly number[], digits: number): string => `${values.map((v) => v.toFixed(digits)).join(', ')} (median ${median(values).toFixed(digits)})`;
  console.log(`bench:kafka-clients — ${ROUNDS} round(s), clients interleaved, each run its own process; one figure per round`);
  for (const client of CLIENTS) {
    const runs = steps.get(client)!;
    const row = (label: string, table: 'noLatency' | 'latency' = 'noLatency'): Row[] => runs.map((r) => r[table]?.[label]).filter((x): x is Row => x !== undefined);
    const output = row('1 output');
    const output10 = row('1 output', 'latency');
    const handOff = row('1 hand-off, unordered');
    console.log(`\n${client}`);
    console.log(`  1 output, no latency: + CPU µs/record over no outputs ${cell(output.map((r) => r.extraCpu), 1)}`);
    console.log(`                        ÷ no-output records/s ${cell(output.map((r) => r.ratio), 2)}; records/s ${cell(output.map((r) => r.recordsPerSecond), 0)}`);
    if (output10.length > 0) console.log(`  1 output, ${LATENCY_MS} ms handler: ÷ no outputs ${cell(output10.map((r) => r.ratio), 2)}; + CPU µs ${cell(output10.map((r) => r.extraCpu), 1)}`);
    console.log(`  producer alone on 1 output's messages: CPU µs/message ${cell(runs.map((r) => r.producer?.cpuPerMessage ?? Number.NaN), 1)}; sends of ${cell(runs.map((r) => r.producer?.perSend ?? Number.NaN), 0)}`);
    console.log(`  framework's share of 1 output (+ CPU minus producer alone): ${cell(runs.map((r, i) => (output[i]?.extraCpu ?? Number.NaN) - (r.producer?.cpuPerMessage ?? Number.NaN)), 1)}`);
    console.log(`  1 hand-off, unordered: + CPU µs/record over a clean unordered record ${cell(runs.map((r) => r.handedOffExtraCpu ?? Number.NaN), 1)}; records/s ${cell(handOff.map((r) => r.recordsPerSecond), 0)}`);
    const perSize = new Map<number, AloneFigures[]>();
    for (const lines of alone.get(client)!) for (const line of lines) perSize.set(line.perSend, [...(perSize.get(line.perSend) ?? []), line]);
    for (const [perSend, figures] of perSize) {
      console.log(`  producer alone, 90-byte values, 3 headers, sends of ${perSend}: CPU µs/message ${cell(figures.map((f) => f.cpuPerMessage), 1)}; messages/s ${cell(figures.map((f) => f.messagesPerSecond), 0)}`);
    }
  }
}

main().then(() => process.exit(0), (error: unknown) => {
  console.error(error);
  process.exit(1);
});
