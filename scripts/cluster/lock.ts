import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Runs `fn` while holding the lock file `path` (created exclusively, holding our pid). A lock whose holder died is
 * taken over; a live holder is waited for, up to `timeoutMs` milliseconds.
 * @throws Error naming the lock and its holder when the wait times out.
 */
export async function withLock<T>(path: string, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  while (!(await tryAcquire(path))) {
    if (performance.now() > deadline) {
      throw new Error(`cluster: ${path} is still held by pid ${await holder(path)}; is another up/down running?`);
    }
    await sleep(250);
  }
  try {
    return await fn();
  } finally {
    await rm(path, { force: true });
  }
}

async function tryAcquire(path: string): Promise<boolean> {
  try {
    await writeFile(path, String(process.pid), { flag: 'wx' });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  if (await isStale(path)) await rm(path, { force: true });
  return false;
}

async function isStale(path: string): Promise<boolean> {
  const pid = await holder(path);
  if (pid === undefined) {
    // Created but not yet written, or its writer died in between: only the latter lasts more than a moment.
    const created = await stat(path).then(
      (s) => s.mtimeMs,
      () => Date.now(),
    );
    return Date.now() - created > 5_000;
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

async function holder(path: string): Promise<number | undefined> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return /^\d+$/.test(text) ? Number(text) : undefined;
}
