'use strict';
// The module osls loads for `plugins: [kafka-lanes/serverless]` (package.json `exports`). The framework runs
// plain Node.js: in a checkout of the repository (the TypeScript source beside this file, tsx installed) the source
// is loaded through tsx, so `npm start` needs no build step; the installed package has no source (package.json
// `files`) and loads its compiled JavaScript, dist/serverless.cjs (`npm run build`).
const { existsSync } = require('node:fs');
const { join } = require('node:path');

function loadSource() {
  const source = join(__dirname, 'index.ts');
  if (!existsSync(source)) return undefined;
  let register;
  try {
    ({ register } = require('tsx/cjs/api'));
  } catch {
    return undefined;
  }
  register();
  return require(source);
}

const plugin = loadSource() ?? require(join(__dirname, '..', '..', 'dist', 'serverless.cjs'));
module.exports = plugin.KafkaLanesPlugin;
