// Loads one bundle in this fresh process, as the Lambda runtime does at cold start, and prints the
// milliseconds `require` took (module evaluation, not the process start): wall time, then the process's CPU
// time over the same span (steadier than wall time on a loaded machine, where a process waits for a core).
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import process from 'node:process';

const require = createRequire(import.meta.url);
const cpu = process.cpuUsage();
const started = performance.now();
const mod = require(process.argv[2]);
const ms = performance.now() - started;
const { user, system } = process.cpuUsage(cpu);
if (typeof mod.handler !== 'function') throw new Error(`${process.argv[2]} exports no handler`);
process.stdout.write(`${ms} ${(user + system) / 1000}\n`);
