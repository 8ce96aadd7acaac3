/**
 * What loading each Kafka client costs (docs/kafka-client.md). The framework loads its client at the first hand-off
 * or output, never at cold start (`importKafkaJs`): the handler's load reads none of it, whatever the client. What
 * the client costs is that first load, measured two ways, RUNS fresh Node processes each, rows taking turns:
 *
 * - bundled as the serverless plugin bundles (`lambdaBuildOptions`: ES module, minified syntax and whitespace): an
 *   entry that imports the client and makes its idempotent producer (not connected), as the chunk the first hand-off
 *   reads; KiB read is that bundle's size;
 * - installed: the same entry, unbundled, importing the package from node_modules, as a service that does not
 *   bundle has it; KiB read is the source Node loaded (counted by a module load hook).
 *
 * @confluentinc/kafka-javascript cannot be bundled (a native addon and librdkafka, loaded from files next to it); its
 * installed row runs with CONFLUENT_KAFKA_DIR (bench/kafka-client/confluent.ts), and its KiB add the addon and
 * librdkafka's shared library the process maps.
 *
 *   npx tsx bench/kafka-client/load.ts
 *   RUNS=21 CONFLUENT_KAFKA_DIR=/tmp/ckjs npx tsx bench/kafka-client/load.ts
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';
import { lambdaBuildOptions } from '../../src/serverless/bundle';
import { median } from '../support';

const RUNS = Number(process.env.RUNS ?? 15);
const ROOT = join(__dirname, '..', '..');
const CONFLUENT_DIR = process.env.CONFLUENT_KAFKA_DIR ?? '';

const ENTRIES: Record<string, string> = {
  kafkajs: "import { Kafka } from 'kafkajs';\nexport const producer = new Kafka({ clientId: 'load', brokers: ['127.0.0.1:9092'] }).producer({ idempotent: true, maxInFlightRequests: 1 });\n",
  '@platformatic/kafka': "import { Producer } from '@platformatic/kafka';\nexport const producer = new Producer({ clientId: 'load', bootstrapBrokers: ['127.0.0.1:9092'], idempotent: true });\n",
  '@confluentinc/kafka-javascript':
    "import { createRequire } from 'node:module';\nconst { KafkaJS } = createRequire(process.env.CONFLUENT_KAFKA_DIR + '/package.json')('@confluentinc/kafka-javascript');\n" +
    "export const producer = new KafkaJS.Kafka({ kafkaJS: { brokers: ['127.0.0.1:9092'], logLevel: 1 } }).producer({ kafkaJS: { idempotent: true, acks: -1 } });\n",
};

// Loads the file in this fresh process and prints: wall ms, CPU ms, KiB of module source loaded, KiB of native files mapped.
const LOADER = `
import { registerHooks } from 'node:module';
import { readFileSync, statSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
let bytes = 0;
registerHooks({ load(url, context, next) { const r = next(url, context); if (r.source != null) bytes += typeof r.source === 'string' ? Buffer.byteLength(r.source) : r.source.byteLength; return r; } });
const cpu = process.cpuUsage();
const started = performance.now();
await import(pathToFileURL(process.argv[2]).href);
const ms = performance.now() - started;
const used = process.cpuUsage(cpu);
const maps = readFileSync('/proc/self/maps', 'utf8').split('\\n').map((l) => l.split(/\\s+/)[5]).filter((f) => f && /rdkafka|confluent-kafka/.test(f));
const native = [...new Set(maps)].reduce((sum, f) => sum + statSync(f).size, 0);
console.log([ms, (used.user + used.system) / 1000, bytes / 1024, native / 1024].join(' '));
`;

interface Row { name: string; file: string; kib?: number }

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'kafka-client-load-'));
  const loader = join(dir, 'loader.mjs');
  writeFileSync(loader, LOADER);
  const rows: Row[] = [];
  for (const [client, source] of Object.entries(ENTRIES)) {
    if (client === '@confluentinc/kafka-javascript' && CONFLUENT_DIR === '') continue;
    const slug = client.replace(/\W+/g, '-');
    // Unbundled: written under the repository's node_modules so that `import` finds the packages there.
    const installed = join(ROOT, 'node_modules', '.cache', 'kafka-client-load', `${slug}.mjs`);
    mkdirSync(dirname(installed), { recursive: true });
    writeFileSync(installed, source);
    rows.push({ name: `${client}, installed`, file: installed });
    if (client === '@confluentinc/kafka-javascript') continue;
    const entry = join(dir, `${slug}.mjs`);
    writeFileSync(entry, source);
    const outfile = join(dir, `${slug}.bundle.mjs`);
    const { splitting: _, chunkNames: __, ...options } = lambdaBuildOptions();
    // @platformatic/kafka's CRC32C reads a .wasm file beside its module, which a bundle does not have: its package's
    // `bundled` export carries the same WebAssembly inline, for bundlers.
    const alias: Record<string, string> = client === '@platformatic/kafka' ? { '@platformatic/wasm-utils': '@platformatic/wasm-utils/bundled' } : {};
    await build({ ...options, entryPoints: [entry], outfile, sourcemap: false, nodePaths: [join(ROOT, 'node_modules')], alias, logLevel: 'error' });
    rows.push({ name: `${client}, bundled (plugin options)`, file: outfile, kib: statSync(outfile).size / 1024 });
  }
  const figures = new Map<string, number[][]>(rows.map((row) => [row.name, []]));
  for (let run = 0; run < RUNS; run += 1) {
    for (const row of rows) {
      const out = execFileSync(process.execPath, [loader, row.file], { encoding: 'utf8', env: { ...process.env, CONFLUENT_KAFKA_DIR: CONFLUENT_DIR, KAFKAJS_NO_PARTITIONER_WARNING: '1' } });
      figures.get(row.name)!.push(out.trim().split(' ').map(Number));
    }
  }
  console.log(`Kafka client load, median of ${RUNS} fresh processes each, rows taking turns`);
  console.log(`${''.padEnd(48)}${'load ms'.padStart(9)}${'CPU ms'.padStart(9)}${'KiB read'.padStart(10)}${'KiB native'.padStart(12)}`);
  for (const row of rows) {
    const runs = figures.get(row.name)!;
    const col = (i: number): number => median(runs.map((r) => r[i]!));
    const kib = row.kib ?? col(2);
    console.log(`${row.name.padEnd(48)}${col(0).toFixed(1).padStart(9)}${col(1).toFixed(1).padStart(9)}${kib.toFixed(0).padStart(10)}${col(3).toFixed(0).padStart(12)}`);
  }
}

main().then(() => process.exit(0), (error: unknown) => {
  console.error(error);
  process.exit(1);
});
