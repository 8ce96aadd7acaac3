import { existsSync, rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { build, type BuildOptions } from 'esbuild';
import { ConfigError } from '../errors';
import type { Serverless } from './framework';
import type { FunctionPlan } from './types';

/**
 * Where bundles go, relative to the service. No dot in the path: Lambda's runtime splits a handler string
 * at its first `.` (`dist-lambda/functions/orders.handler` -> module `dist-lambda/functions/orders`).
 */
export const BUNDLE_DIR = 'dist-lambda';

const SOURCE_EXTENSIONS = ['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs'] as const;

/** A function to bundle: its handler string, or an absolute entry file with the name of its export. */
export type BundleEntry =
  | { readonly key: string; readonly handler: string }
  | { readonly key: string; readonly entryFile: string; readonly exportName: string; readonly outName: string };

/**
 * Splits a handler string the way Lambda's Node.js runtime does: at the first `.` after the last `/`.
 *
 * @example
 * splitHandler('functions/orders.handler'); // { module: 'functions/orders', exportName: 'handler' }
 */
export function splitHandler(handler: string): { module: string; exportName: string } {
  const slash = handler.lastIndexOf('/');
  const dot = handler.indexOf('.', slash + 1);
  if (dot <= slash + 1 || dot === handler.length - 1) {
    throw new ConfigError(`Invalid handler \`${handler}\`: expected \`<path/to/file>.<export>\`, like \`functions/orders.handler\``);
  }
  return { module: handler.slice(0, dot), exportName: handler.slice(dot + 1) };
}

function sourceFile(servicePath: string, module: string): string {
  for (const extension of SOURCE_EXTENSIONS) {
    const file = resolve(servicePath, module + extension);
    if (existsSync(file)) return file;
  }
  throw new ConfigError(
    `Handler module \`${module}\` not found: expected one of ${SOURCE_EXTENSIONS.map((e) => `\`${module}${e}\``).join(', ')} in ${servicePath}`,
  );
}

/** The source file of a handler string (`functions/orders.handler` -> `<service>/functions/orders.ts`). */
export function handlerSourceFile(servicePath: string, handler: string): string {
  return sourceFile(servicePath, splitHandler(handler).module);
}

/** The extension of a handler's bundle: an ES module, whatever the service's package.json says. */
export const BUNDLE_EXTENSION = '.mjs';

/**
 * How the plugin bundles handlers with esbuild, for `bundleHandlers` and bench:coldstart: ES modules with
 * `splitting`, for Node.js 22, with source maps (the Lua scripts are modules, so they are inside).
 *
 * Why ES modules with splitting: a cold start reads, compiles and evaluates what the handler's file holds. What the
 * framework needs only later is an `import()` (kafkajs and the hand-off writer at the first hand-off, ioredis and
 * Powertools at the first invocation, the AWS SDK and the MSK signer with MSK only), and with splitting each becomes
 * a chunk of its own, read when first imported. A CommonJS bundle keeps them in the one file, not evaluated but
 * still read and parsed at every cold start. The AWS SDK stays in the bundle (in chunks never read at load), so the
 * functions do not depend on the SDK version the runtime ships. Lambda's Node.js runtime loads a handler from a
 * `.mjs` file by the same handler string (`dist-lambda/functions/orders.handler`), as serverless-offline does.
 *
 * @example
 * await build({ ...lambdaBuildOptions(), entryPoints: { 'functions/orders': 'functions/orders.ts' }, outdir: 'dist-lambda' });
 */
export function lambdaBuildOptions(): BuildOptions {
  return {
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'esm',
    splitting: true,
    outExtension: { '.js': BUNDLE_EXTENSION },
    chunkNames: 'chunks/[name]-[hash]',
    // The CommonJS packages inside (kafkajs, ioredis) call `require` for Node.js built-ins, which an ES module has
    // not: each file of the bundle gets one.
    banner: { js: "import { createRequire as __klCreateRequire } from 'node:module'; const require = __klCreateRequire(import.meta.url);" },
    // Whitespace and syntax, not identifiers, so stack traces stay readable; `keepNames` keeps class names when
    // esbuild renames a class to avoid a clash in the bundle (error names come from them: `lanes-error-class`).
    minifyWhitespace: true,
    keepNames: true,
    minifySyntax: true,
    sourcemap: true,
    logLevel: 'warning',
    // Some dependencies ship optional native or cloud-only modules they load lazily inside a try.
    external: ['snappy', 'kafkajs-snappy', 'lz4', 'zstd'],
  };
}

/**
 * Bundles handlers with esbuild into `dist-lambda/` (one ES module per handler and the chunks they share, see
 * `lambdaBuildOptions`) and returns each function's new handler string.
 *
 * @example
 * await bundleHandlers('/srv/shop', [{ key: 'orders', handler: 'functions/orders.handler' }]);
 * // Map { 'orders' => 'dist-lambda/functions/orders.handler' }
 */
export async function bundleHandlers(servicePath: string, entries: readonly BundleEntry[]): Promise<Map<string, string>> {
  const outDir = join(servicePath, BUNDLE_DIR);
  rmSync(outDir, { recursive: true, force: true });
  const entryPoints: Record<string, string> = {};
  const handlers = new Map<string, string>();
  for (const entry of entries) {
    const { outName, file, exportName } =
      'handler' in entry
        ? (() => {
            const { module, exportName } = splitHandler(entry.handler);
            const file = sourceFile(servicePath, module);
            return { outName: relative(servicePath, file).replace(/\.[cm]?[jt]s$/, ''), file, exportName };
          })()
        : { outName: entry.outName, file: entry.entryFile, exportName: entry.exportName };
    if (outName.startsWith('..') || outName.includes('.')) {
      throw new ConfigError(`Handler file \`${outName}\` of function \`${entry.key}\`: expected a path inside the service without a \`.\` in its folder names`);
    }
    entryPoints[outName] = file;
    handlers.set(entry.key, `${BUNDLE_DIR}/${outName.split('\\').join('/')}.${exportName}`);
  }
  if (Object.keys(entryPoints).length === 0) return handlers;
  await build({ ...lambdaBuildOptions(), entryPoints, outdir: outDir });
  return handlers;
}

/** The functions of the framework itself: the module of this package each runs, and its bundle under `BUNDLE_DIR`. */
export const FRAMEWORK_FUNCTIONS = {
  committer: { module: 'committer-handler', out: 'kafka-lanes/committer' },
  topics: { module: 'topics-handler', out: 'kafka-lanes/topics' },
  topicsProvider: { module: 'topics-provider', out: 'kafka-lanes/topics-provider' },
  produce: { module: 'produce-handler', out: 'kafka-lanes/produce' },
} as const;
type FrameworkFunction = keyof typeof FRAMEWORK_FUNCTIONS;

/** The handler string of a framework function, once bundled. */
export const frameworkHandler = (kind: FrameworkFunction): string => `${BUNDLE_DIR}/${FRAMEWORK_FUNCTIONS[kind].out}.handler`;

/**
 * What `bundleHandlers` bundles for a service: each framework function from its module in this package, and each
 * Node.js handler of the service's own unless `custom.kafkaLanes.bundle` is `false`.
 */
export function bundleEntries(
  service: Pick<Serverless['service'], 'functions' | 'getAllFunctions' | 'provider'>,
  plans: readonly FunctionPlan[],
  bundleUser: boolean,
): BundleEntry[] {
  const framework = new Map<string, FrameworkFunction>();
  for (const plan of plans) {
    if (plan.committer !== undefined) framework.set(plan.committer.key, 'committer');
    framework.set(plan.topics.key, 'topics');
    framework.set(plan.topics.provider.key, 'topicsProvider');
    if (plan.producer !== undefined) framework.set(plan.producer.key, 'produce');
  }
  const entries: BundleEntry[] = [];
  for (const key of service.getAllFunctions()) {
    const fn = service.functions[key]!;
    const kind = framework.get(key);
    const runtime = String(fn['runtime'] ?? service.provider.runtime ?? 'nodejs');
    if (kind !== undefined) {
      entries.push({ key, entryFile: frameworkSource(FRAMEWORK_FUNCTIONS[kind].module), exportName: 'handler', outName: FRAMEWORK_FUNCTIONS[kind].out });
    } else if (bundleUser && runtime.startsWith('nodejs') && typeof fn.handler === 'string') {
      entries.push({ key, handler: fn.handler });
    }
  }
  return entries;
}

/**
 * A framework function's source inside this package: TypeScript in a checkout, the built ES module beside the built
 * plugin (dist/<module>.mjs beside dist/serverless.cjs) in the installed package.
 */
function frameworkSource(module: string): string {
  for (const file of [`${module}.ts`, `${module}.mjs`]) {
    const path = join(__dirname, file);
    if (existsSync(path)) return path;
  }
  throw new Error(`kafka-lanes: ${module} not found next to ${__filename}`);
}
