/** Helpers for the template tests: throw-away projects on disk, and the worker processes of this test process. */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** A temporary project directory holding `files` (relative path -> content); remove() deletes it. */
export async function makeProject(files: Record<string, string | Uint8Array>): Promise<{ root: string; remove: () => Promise<void> }> {
  const root = await mkdtemp(join(tmpdir(), 'gantry-template-'));
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), content);
  }
  return { root, remove: () => rm(root, { recursive: true, force: true }) };
}

/** Pids of the running worker.py children of this process, read from /proc (Linux). */
export async function workerPids(): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      // Fields after the parenthesised command name: state, ppid, ...
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) !== process.pid || state === 'Z') continue;
      const commandLine = await readFile(`/proc/${entry}/cmdline`, 'utf8');
      if (commandLine.includes('worker.py')) pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}
