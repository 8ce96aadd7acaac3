/**
 * Tests mirror the source: every folder under `src/` has a unit test folder of the same name under `test/unit/`, with
 * at least one test file in it (at any depth). The folders are read from disk, so a folder that lands later is
 * covered the day it lands.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SRC } from './source-tree';

const UNIT = join(__dirname, '..');

/** The folders directly under `root`. */
function foldersOf(root: string): string[] {
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

/** Whether `folder` holds a `*.test.ts` file, at any depth. */
function holdsTest(folder: string): boolean {
  return readdirSync(folder, { withFileTypes: true }).some((entry) =>
    entry.isDirectory() ? holdsTest(join(folder, entry.name)) : entry.name.endsWith('.test.ts'));
}

/** The source folders whose unit folder is missing or holds no test, with what is wrong. */
function unmirrored(src: string, unit: string): string[] {
  return foldersOf(src).flatMap((folder) => {
    const tests = join(unit, folder);
    if (!existsSync(tests)) return [`src/${folder}/ has no test/unit/${folder}/`];
    return holdsTest(tests) ? [] : [`test/unit/${folder}/ holds no test file`];
  });
}

describe('unit test folders', () => {
  it('reads the source folders from disk', () => {
    // Guards the check itself: a listing that found nothing would pass every tree.
    expect(foldersOf(SRC)).toEqual(expect.arrayContaining(['engine', 'handler', 'lanes', 'testing']));
  });

  it('has a unit test folder with a test file for every folder under src/', () => {
    expect(unmirrored(SRC, UNIT)).toEqual([]);
  });

  it('names a source folder without a unit folder, and a unit folder without a test', () => {
    const fixture = mkdtempSync(join(tmpdir(), 'unit-folders-'));
    try {
      for (const folder of ['src/engine', 'src/lanes', 'src/ports', 'unit/engine/deep', 'unit/lanes']) mkdirSync(join(fixture, folder), { recursive: true });
      writeFileSync(join(fixture, 'unit/engine/deep/engine.test.ts'), '');
      writeFileSync(join(fixture, 'unit/lanes/factories.ts'), '');
      expect(unmirrored(join(fixture, 'src'), join(fixture, 'unit'))).toEqual([
        'test/unit/lanes/ holds no test file',
        'src/ports/ has no test/unit/ports/',
      ]);
    } finally {
      rmSync(fixture, { recursive: true, force: true });
    }
  });
});
