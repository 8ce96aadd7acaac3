// Loads one bundle in this fresh process, as the Lambda runtime does at cold start (`import()` of an ES module,
// `require` of a CommonJS file), and prints the milliseconds the load took (module evaluation, not the process
// start): wall time, then the process's CPU time over the same span (steadier than wall time on a loaded machine,
// where a process waits for a core). With --first-call, it then calls the handler once with an event of no
// records and prints a third figure: that call's wall milliseconds, where what the framework loads at first use
// (ioredis, Powertools) is paid; the connections are closed afterwards.
//   node load.mjs <bundle.mjs|bundle.js> [--first-call]
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { pathToFileURL } from 'node:url';

const file = process.argv[2];
const cpu = process.cpuUsage();
const started = performance.now();
const mod = file.endsWith('.mjs') ? await import(pathToFileURL(file).href) : createRequire(import.meta.url)(file);
const ms = performance.now() - started;
const { user, system } = process.cpuUsage(cpu);
if (typeof mod.handler !== 'function') throw new Error(`${file} exports no handler`);
const figures = [ms, (user + system) / 1000];
if (process.argv.includes('--first-call')) {
  const event = { eventSource: 'SelfManagedKafka', bootstrapServers: '127.0.0.1:9092', records: {} };
  const context = { awsRequestId: 'coldstart', getRemainingTimeInMillis: () => 60_000 };
  const callStarted = performance.now();
  await mod.handler(event, context);
  figures.push(performance.now() - callStarted);
  await mod.handler.close?.();
}
process.stdout.write(`${figures.join(' ')}\n`);
