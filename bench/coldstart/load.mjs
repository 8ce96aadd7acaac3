// Loads one bundle in this fresh process, as the Lambda runtime does at cold start, and prints the
// milliseconds `require` took (module evaluation, not the process start).
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import process from 'node:process';

const require = createRequire(import.meta.url);
const started = performance.now();
const mod = require(process.argv[2]);
const ms = performance.now() - started;
if (typeof mod.handler !== 'function') throw new Error(`${process.argv[2]} exports no handler`);
process.stdout.write(`${ms}\n`);
