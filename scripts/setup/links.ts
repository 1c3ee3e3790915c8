/**
 * Makes `.cluster/bin` the one directory to put on PATH for the project's tools, whatever cache they live in.
 */
import { chmod, mkdir, readFile, readlink, rename, symlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Makes `path` a symlink to `target`, replacing whatever is there (atomically, via rename) unless it already
 * points there.
 */
export async function link(path: string, target: string): Promise<void> {
  if ((await readlink(path).catch(() => undefined)) === target) return;
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.tmp-${process.pid}`;
  await symlink(target, temp);
  await rename(temp, path);
}

/**
 * Writes `path` as a launcher script that execs `python`. A symlink would not do: Python locates its virtualenv
 * from the path it was started by (pyvenv.cfg beside that bin/), and a symlink elsewhere loses the env.
 */
export async function writePythonLauncher(path: string, python: string): Promise<void> {
  const script = `#!/bin/sh\nexec '${python}' "$@"\n`;
  if ((await readFile(path, 'utf8').catch(() => undefined)) === script) return;
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.tmp-${process.pid}`;
  await writeFile(temp, script);
  await chmod(temp, 0o755);
  await rename(temp, path);
}
