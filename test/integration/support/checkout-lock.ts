/**
 * A lock over one folder of this checkout, shared by the jest workers that run the integration files side by
 * side: the few steps that write such a folder run one at a time, the rest of their files concurrently.
 *
 * - `dist-lambda`: `serverless package` of the example service (the checkout's root) empties and rewrites
 *   `<root>/dist-lambda/` before it zips it; a second package of the root meanwhile would zip half of one.
 * - `dist`: `npm run build` (and `infra/build/package.ts`) empties and rewrites `<root>/dist/`, which `npm pack` and
 *   the probes of the built entries read.
 *
 * The lock is a directory made atomically under `.sls-tmp/locks/` (git-ignored) holding its owner's process id; a
 * lock whose owner is gone (a run killed) is taken over. Within one process, work run inside `withCheckoutLock`
 * holds the lock for what it calls (`serverless()` under a test that holds `dist-lambda` already does not wait for
 * itself); two unrelated calls of one process wait for each other like two processes.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type CheckoutFolder = 'dist-lambda' | 'dist';

const LOCKS = join(__dirname, '..', '..', '..', '.sls-tmp', 'locks');
/** A lock directory found without its owner file for this long is a holder that died between the two writes. */
const OWNERLESS_STALE_MS = 60_000;
const POLL_MS = 100;
/** Longer than any step a lock guards takes on a loaded machine; then the test fails naming the holder. */
const GIVE_UP_MS = 15 * 60_000;

const held = new AsyncLocalStorage<ReadonlySet<CheckoutFolder>>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: a process of another user holds that id, alive.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The owner's process id when the lock is held by a live process, `undefined` when it is free or stale. */
function liveOwner(dir: string): number | 'unknown' | undefined {
  let text: string;
  try {
    text = readFileSync(join(dir, 'owner'), 'utf8');
  } catch {
    try {
      return Date.now() - statSync(dir).mtimeMs > OWNERLESS_STALE_MS ? undefined : 'unknown';
    } catch {
      return undefined; // released meanwhile
    }
  }
  const pid = Number(text);
  return Number.isSafeInteger(pid) && alive(pid) ? pid : undefined;
}

/**
 * Waits for the lock on `folder` and takes it; the returned function releases it (for a lock held across a file's
 * hooks, `beforeAll` to `afterAll`). Prefer `withCheckoutLock` for a step.
 */
export async function acquireCheckoutLock(folder: CheckoutFolder): Promise<() => void> {
  mkdirSync(LOCKS, { recursive: true });
  const dir = join(LOCKS, folder);
  const giveUpAt = Date.now() + GIVE_UP_MS;
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(join(dir, 'owner'), String(process.pid));
      let released = false;
      return () => {
        if (released) return;
        released = true;
        rmSync(dir, { recursive: true, force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = liveOwner(dir);
    if (owner === undefined) {
      rmSync(dir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > giveUpAt) throw new Error(`checkout lock ${dir}: still held by process ${owner} after ${GIVE_UP_MS / 60_000} minutes`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/**
 * Runs `work` holding the lock on `folder` (taken at once when the caller's own work holds it already).
 *
 * @example
 * const packaged = await withCheckoutLock('dist-lambda', () => serverless(ROOT, ['package', '--package', out]));
 */
export async function withCheckoutLock<T>(folder: CheckoutFolder, work: () => Promise<T>): Promise<T> {
  const holding = held.getStore() ?? new Set<CheckoutFolder>();
  if (holding.has(folder)) return work();
  const release = await acquireCheckoutLock(folder);
  try {
    return await held.run(new Set([...holding, folder]), work);
  } finally {
    release();
  }
}
