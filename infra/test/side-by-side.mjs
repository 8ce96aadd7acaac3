#!/usr/bin/env node
/**
 * Runs npm scripts side by side and prints each one's output whole once it has ended, in the order given, so two
 * logs never interleave; exits with the first failing script's status (after all have ended). `npm test` runs
 * lint and typecheck so: each keeps one core busy for most of a minute, neither waits for the other.
 *
 *   node infra/test/side-by-side.mjs lint typecheck
 */
import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import console from 'node:console';
import process from 'node:process';

const names = process.argv.slice(2);
if (names.length === 0) {
  console.error('Expected the names of npm scripts to run side by side, got none');
  process.exit(2);
}

/** Runs `npm run <name>`; its exit status and everything it printed (stdout and stderr in arrival order). */
function run(name) {
  return new Promise((resolve) => {
    const chunks = [];
    const child = spawn('npm', ['run', name], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk) => chunks.push(chunk));
    child.stderr.on('data', (chunk) => chunks.push(chunk));
    child.on('error', (error) => resolve({ name, status: 1, output: Buffer.from(`npm run ${name} did not start: ${error.message}\n`) }));
    child.on('close', (code, signal) => resolve({ name, status: code ?? (signal === null ? 1 : 128), output: Buffer.concat(chunks) }));
  });
}

const runs = names.map(run);
let status = 0;
for (const pending of runs) {
  const { name, status: own, output } = await pending;
  process.stdout.write(output);
  if (own !== 0) {
    console.error(`npm run ${name} failed (exit ${own})`);
    if (status === 0) status = own;
  }
}
process.exit(status);
