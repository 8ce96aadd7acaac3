'use strict';
// The module osls loads for `plugins: [kafka-lanes/serverless]` (package.json `exports`). The framework runs
// plain Node.js: in a checkout with tsx installed the TypeScript source is loaded through tsx, so `npm start`
// needs no build step; an installed package loads its compiled JavaScript.
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

const plugin = loadSource() ?? require(join(__dirname, '..', '..', 'dist', 'src', 'serverless', 'index.js'));
module.exports = plugin.KafkaLanesPlugin;
