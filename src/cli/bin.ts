#!/usr/bin/env node
// The `kafka-lanes` executable of the installed package (package.json `bin`); `npm run cli` runs main.ts.
import { runCli } from './main';

void runCli(process.argv).then((code) => {
  process.exitCode = code;
});
