/**
 * A chromium for the browser tests, found without root: `$CHROMIUM_PATH`; else a `chromium` on PATH (Debian's);
 * else the one the dev dependency @sparticuz/chromium ships inside its npm package (a headless build and the NSS
 * libraries it links, for Linux x64), unpacked into the temporary directory on first use.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { brotliDecompressSync } from 'node:zlib';
import type { LaunchOptions } from 'playwright-core';

/** How to launch the browser: playwright-core's `chromium.launch(await browserLaunchOptions())`. */
export async function browserLaunchOptions(): Promise<LaunchOptions> {
  const args = ['--no-sandbox', '--disable-gpu', '--lang=en-US'];
  const given = process.env['CHROMIUM_PATH'] || onPath('chromium') || onPath('chromium-browser');
  if (given) return { executablePath: given, args };
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const packaged = require('@sparticuz/chromium') as { executablePath(): Promise<string> };
  const executablePath = await packaged.executablePath();
  // The build links NSS, NSPR and expat from beside it (Amazon Linux's, shipped in the package): the machine
  // needs none of its own.
  const libraries = unpackLibraries(join(dirname(require.resolve('@sparticuz/chromium')), '..', '..', 'bin', 'al2023.tar.br'));
  const libraryPath = [libraries, process.env['LD_LIBRARY_PATH']].filter(Boolean).join(':');
  // Its V8 takes the default locale from the environment, and `C.UTF-8` becomes a tag Intl refuses (`en-US@posix`).
  return { executablePath, args, env: { ...process.env, LD_LIBRARY_PATH: libraryPath, LANG: 'en_US.UTF-8', LC_ALL: 'en_US.UTF-8' } as Record<string, string> };
}

function onPath(command: string): string | undefined {
  try {
    return execFileSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The package's brotli-compressed tar of libraries, unpacked once (by whichever process gets there first). */
function unpackLibraries(archive: string): string {
  const target = join(tmpdir(), `kafka-lanes-chromium-libs-${readFileSync(archive).length}`);
  if (existsSync(join(target, 'lib'))) return join(target, 'lib');
  const staging = `${target}.${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  execFileSync('tar', ['-x', '-C', staging], { input: brotliDecompressSync(readFileSync(archive)) });
  const unpacked = existsSync(join(staging, 'al2023', 'lib')) ? join(staging, 'al2023') : staging;
  try {
    renameSync(unpacked, target);
  } catch (error) {
    if (!existsSync(join(target, 'lib'))) throw error; // another process unpacked it meanwhile: use theirs
  }
  rmSync(staging, { recursive: true, force: true });
  return join(target, 'lib');
}
