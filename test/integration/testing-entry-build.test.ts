/**
 * The built `kafka-lanes/testing` (dist/, what the package ships), as a user's test loads it: through `require` (jest
 * runs CommonJS) and through `import` (vitest). In a fresh Node.js process each, a handler made with the built
 * `kafka-lanes` runs through the built testing entry (its NonRetriableError is the engine's: one copy of the error
 * classes), and neither kafkajs, ioredis nor an AWS SDK client is loaded.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { acquireCheckoutLock } from './support/checkout-lock';
import { ROOT } from './support/serverless';

const run = promisify(execFile);
jest.setTimeout(300_000);

/** What a fresh process reports after running a handler through the entries of `dist/` (`cjs` or `mjs`). */
async function probe(ext: 'cjs' | 'mjs'): Promise<{ deadLetters: unknown; outputs: number; heavy: string[] }> {
  const script = `
    import { createRequire } from 'node:module';
    const require = createRequire(import.meta.url);
    const load = (name) => ${ext === 'cjs' ? 'Promise.resolve(require(name))' : 'import(name)'};
    const { lanes, NonRetriableError } = await load(${JSON.stringify(join(ROOT, 'dist', `index.${ext}`))});
    const { testLanes } = await load(${JSON.stringify(join(ROOT, 'dist', `testing.${ext}`))});
    const handler = lanes({ group: 'g', value: 'json' }, async (record, ctx) => {
      await ctx.step('s', () => 1);
      if (record.value === 1) throw new NonRetriableError('no');
      if (ctx.attempt === 1) throw new Error('again');
      ctx.send('out', { value: record.value });
    });
    const t = testLanes(handler);
    await t.run([{ key: 'a', value: 1 }, { key: 'b', value: 2 }]);
    const heavy = Object.keys(require.cache).filter((path) => /node_modules[\\\\/](kafkajs|ioredis|@aws-sdk|@smithy|aws-msk-iam-sasl-signer-js)[\\\\/]/.test(path));
    console.log(JSON.stringify({ deadLetters: t.deadLetters.map((d) => [d.reason, d.error?.name]), outputs: t.outputs.length, heavy }));
  `;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
  return JSON.parse(stdout) as { deadLetters: unknown; outputs: number; heavy: string[] };
}

// dist/ is this file's from its build to its last probe: another file's build would empty it meanwhile.
let releaseDist: (() => void) | undefined;

beforeAll(async () => {
  releaseDist = await acquireCheckoutLock('dist');
  await run(process.execPath, ['--import', 'tsx', join(ROOT, 'infra', 'build', 'package.ts')], { cwd: ROOT });
});

afterAll(() => releaseDist?.());

describe('the built kafka-lanes/testing', () => {
  it.each(['cjs', 'mjs'] as const)('runs a handler of the built kafka-lanes (%s) and loads neither kafkajs, ioredis nor an AWS SDK client', async (ext) => {
    // Act
    const seen = await probe(ext);

    // Assess
    expect(seen).toEqual({ deadLetters: [['non-retriable', 'NonRetriableError']], outputs: 1, heavy: [] });
  });

  it('sees the operator entry load kafkajs (the probe can tell)', async () => {
    // Act
    const { stdout } = await run(process.execPath, ['-e', `require(${JSON.stringify(join(ROOT, 'dist', 'operator.cjs'))}); console.log(Object.keys(require.cache).some((p) => /node_modules[\\\\/]kafkajs[\\\\/]/.test(p)))`], { cwd: ROOT });

    // Assess
    expect(stdout.trim()).toBe('true');
  });
});
