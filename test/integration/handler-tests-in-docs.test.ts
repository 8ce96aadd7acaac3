/**
 * The README's handler test ("Test your handler", `test/orders.test.ts`) runs here, against the README's handler
 * (`src/orders.ts`), as a user's project has them, and so do the tests of docs/testing.md: the files are written into a
 * scratch project and each test file is loaded into this jest file, so its `it`s run as this file's tests. It imports `vitest`, which this repository
 * does not install: the names it uses are jest's own globals (as the snippet type-check declares them, from `@jest/globals`). `kafka-lanes` and `kafka-lanes/testing` are the package's sources.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fragmentModule, projectFiles, readSnippets } from '../support/doc-snippets';
import { ROOT } from './support/serverless';

const readme = readSnippets(readFileSync(join(ROOT, 'README.md'), 'utf8'), 'README.md').snippets;
const files = projectFiles(readme, []);
const TEST = 'test/orders.test.ts';
const HANDLER = 'src/orders.ts';

mkdirSync(join(ROOT, '.sls-tmp'), { recursive: true });
const project = mkdtempSync(join(ROOT, '.sls-tmp', 'handler-tests-'));
// The README's serverless.yml beside them: testLanes reads its block of the test's group (outputs, tiers).
for (const path of [TEST, HANDLER, 'serverless.yml']) {
  const file = files.get(path);
  if (file === undefined) throw new Error(`README.md: expected a whole file \`// ${path}\` (the handler and its test, "Test your handler")`);
  mkdirSync(dirname(join(project, path)), { recursive: true });
  writeFileSync(join(project, path), file.text);
}
// The test imports `../src/orders.js`, as TypeScript's `nodenext` wants and vitest resolves to the `.ts`; jest needs the file.
writeFileSync(join(project, 'src', 'orders.js'), "module.exports = require('./orders.ts');\n");

/** docs/middy-and-powertools.md: its whole files (two handlers and their test), written beside the README's. */
const MIDDY_TEST = 'test/powertools.test.ts';
const middyGuide = projectFiles([], readSnippets(readFileSync(join(ROOT, 'docs', 'middy-and-powertools.md'), 'utf8'), 'docs/middy-and-powertools.md').snippets);
for (const [path, file] of middyGuide) {
  mkdirSync(dirname(join(project, path)), { recursive: true });
  writeFileSync(join(project, path), file.text);
  // Its test imports `../src/<name>.js` too.
  if (path.startsWith('src/')) writeFileSync(join(project, path.replace(/\.ts$/, '.js')), `module.exports = require('./${path.slice(4)}');\n`);
}

/** The tests of docs/testing.md: its TypeScript blocks that use `kafka-lanes/testing`, each a module of its own. */
const guide = readSnippets(readFileSync(join(ROOT, 'docs', 'testing.md'), 'utf8'), 'docs/testing.md').snippets
  .filter((snippet) => snippet.lang === 'ts' && snippet.path === undefined && snippet.text.includes("from 'kafka-lanes/testing'"))
  .map((snippet) => {
    const { name, text } = fragmentModule(snippet);
    mkdirSync(dirname(join(project, name)), { recursive: true });
    writeFileSync(join(project, name), text);
    return name;
  });

const group = process.env.KAFKA_LANES_GROUP;
afterAll(() => {
  rmSync(project, { recursive: true, force: true });
  if (group === undefined) delete process.env.KAFKA_LANES_GROUP;
  else process.env.KAFKA_LANES_GROUP = group;
});

jest.doMock('vitest', () => ({ afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, test, vi: jest }), { virtual: true });
jest.doMock('kafka-lanes', () => jest.requireActual(join(ROOT, 'src')), { virtual: true });
jest.doMock('kafka-lanes/testing', () => jest.requireActual(join(ROOT, 'src', 'testing')), { virtual: true });

describe("the README's handler test", () => {
  // Run from the project, as `npx vitest run` runs it: testLanes finds the README's serverless.yml there.
  const cwd = process.cwd();
  beforeAll(() => process.chdir(project));
  afterAll(() => process.chdir(cwd));

  it('tests the README handler through kafka-lanes/testing, imported as a module imports it', () => {
    expect(files.get(TEST)!.text).toMatch(/from 'kafka-lanes\/testing'/);
    expect(files.get(TEST)!.text).toMatch(/^import \{ handler \} from '\.\.\/src\/orders\.js';$/m);
    expect(files.get(TEST)!.text).not.toMatch(/KAFKA_LANES_GROUP|import\(/);
  });

  // Its `it` runs here, with its own name: loaded while this file's tests are collected, so a `require`.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require(join(project, TEST));
});

describe('the test of docs/middy-and-powertools.md', () => {
  it('is found, with the two handlers it runs', () => {
    expect([...middyGuide.keys()].sort()).toEqual(['src/logged.ts', 'src/payments.ts', MIDDY_TEST]);
  });

  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require(join(project, MIDDY_TEST));
});

describe('the tests of docs/testing.md', () => {
  it('are found', () => {
    expect(guide.length).toBeGreaterThanOrEqual(4);
  });

  for (const name of guide) {
    describe(name, () => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      require(join(project, name));
    });
  }
});
