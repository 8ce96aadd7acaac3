/**
 * Builds what the npm package ships into dist/ (`npm run build`; `npm pack` runs it through `prepack`):
 *
 * - dist/*.mjs: the entries users import (`kafka-lanes`, `kafka-lanes/operator`, `kafka-lanes/testing`), the
 *   committer's handler the plugin bundles, and the CLI; ES modules with code splitting, so every lazy `import()`
 *   of the source stays an `import()` of a chunk (dist/chunks/) that a user's bundler keeps lazy too. The packages
 *   the framework depends on stay imports: the user's bundler (or Node.js) resolves them. Class names are kept
 *   (`keepNames`): error names come from them, and a user's bundler renames identifiers.
 * - dist/serverless.cjs: the serverless plugin, CommonJS (the framework `require`s plugins), loaded by
 *   src/serverless/plugin.cjs in an installed package.
 * - dist/types/: the declarations, from tsconfig.build.json.
 *
 * It fails when an output calls `require` (a bundler cannot follow it in an ES module, and Node.js has none there).
 *
 *   npm run build
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build, type BuildOptions, type Plugin } from 'esbuild';

const ROOT = join(__dirname, '..', '..');
const DIST = join(ROOT, 'dist');

/** The ES module entries: output name (dist/<name>.mjs) -> source. */
export const ESM_ENTRIES = {
  index: 'src/index.ts',
  operator: 'src/operator.ts',
  testing: 'src/testing/index.ts',
  'committer-handler': 'src/serverless/committer-handler.ts',
  'topics-handler': 'src/serverless/topics-handler.ts',
  'topics-provider': 'src/serverless/topics-provider.ts',
  'produce-handler': 'src/serverless/produce-handler.ts',
  cli: 'src/cli/bin.ts',
} as const;

/**
 * CommonJS packages imported by name: Node.js finds only some of their names when an ES module imports them
 * (`import { logLevel } from 'kafkajs'` fails), so the ES module build imports their `module.exports` and takes the
 * names from it. A bundler sees a plain default import of a CommonJS package.
 */
const COMMONJS_PACKAGES = ['kafkajs', 'ioredis'];

const commonJsNames: Plugin = {
  name: 'commonjs-names',
  setup(build) {
    const filter = new RegExp(`^(${COMMONJS_PACKAGES.join('|')})$`);
    build.onResolve({ filter }, (args) => (args.namespace === 'commonjs-names' ? { path: args.path, external: true } : { path: args.path, namespace: 'commonjs-names' }));
    build.onLoad({ filter: /.*/, namespace: 'commonjs-names' }, (args) => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const names = Object.keys(require(args.path) as object).filter((name) => /^[A-Za-z_$][\w$]*$/.test(name) && name !== 'default');
      return {
        contents: `import m from '${args.path}';\nexport const { ${names.join(', ')} } = m;\nexport default m;\n`,
        loader: 'js',
        resolveDir: ROOT,
      };
    });
  },
};

/** The entries users `require` (jest): output name (dist/<name>.cjs) -> source. */
const COMMONJS_ENTRIES = { index: 'src/index', operator: 'src/operator', testing: 'src/testing/index' } as const;

/** Every package external but `bundled`. */
function externalBut(bundled: readonly string[]): Plugin {
  return {
    name: 'external-but',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, (args) => {
        const name = args.path.startsWith('@') ? args.path.split('/').slice(0, 2).join('/') : args.path.split('/')[0]!;
        return bundled.includes(name) ? undefined : { path: args.path, external: true };
      });
    },
  };
}

const COMMON: BuildOptions = {
  absWorkingDir: ROOT,
  bundle: true,
  platform: 'node',
  target: 'node22',
  packages: 'external',
  keepNames: true,
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
};

async function main(): Promise<void> {
  rmSync(DIST, { recursive: true, force: true });
  const esm = await build({
    ...COMMON,
    entryPoints: ESM_ENTRIES,
    outdir: DIST,
    format: 'esm',
    splitting: true,
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    // @middy/core is inside, as in the CommonJS file: the handler runs on the middy it was tested with whatever
    // major a service installs for its own middlewares (the optional peer: 6 or 7), and needs none installed.
    packages: undefined,
    plugins: [commonJsNames, externalBut(['@middy/core'])],
  });
  await build({ ...COMMON, entryPoints: { serverless: 'src/serverless/index.ts' }, outdir: DIST, format: 'cjs', outExtension: { '.js': '.cjs' } });
  // For `require` (jest, which runs CommonJS): one file with every entry's exports, so the entries share one copy of
  // the error classes (`instanceof` holds across them); @middy/core, an ES module only, is inside. Each entry is a
  // getter that `require`s it: esbuild evaluates a required module at its first `require`, so requiring one entry
  // evaluates only the modules it imports (`kafka-lanes/testing` loads neither kafkajs nor ioredis).
  const entries = Object.keys(COMMONJS_ENTRIES);
  await build({
    ...COMMON,
    packages: undefined,
    plugins: [externalBut(['@middy/core'])],
    stdin: {
      contents: `module.exports = {\n${entries.map((name) => `  get ${name}() { return require('./${COMMONJS_ENTRIES[name as keyof typeof COMMONJS_ENTRIES]}'); },`).join('\n')}\n};\n`,
      resolveDir: ROOT,
      loader: 'js',
      sourcefile: 'kafka-lanes.ts',
    },
    outfile: join(DIST, 'kafka-lanes.cjs'),
    format: 'cjs',
  });
  for (const name of entries) writeFileSync(join(DIST, `${name}.cjs`), `'use strict';\nmodule.exports = require('./kafka-lanes.cjs').${name};\n`);
  for (const output of Object.keys(esm.metafile!.outputs)) {
    if (output.endsWith('.mjs') && /\b__require\b/.test(readFileSync(join(ROOT, output), 'utf8'))) {
      throw new Error(`${output} calls \`require\`: use an \`import()\` or a static import in the source it comes from`);
    }
  }
  chmodSync(join(DIST, 'cli.mjs'), 0o755);
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
