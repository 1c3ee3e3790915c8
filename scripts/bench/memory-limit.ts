/**
 * A memory limit for one benchmarked process, as a container's: a cgroup with the limit, and a launcher that starts
 * the process inside it. Node sizes V8's heap from the memory it may use (its young generation is 128 MiB on this
 * 24 GiB machine, 32 MiB under a 1 GiB limit), so a server role measured without its container's limit shows an RSS
 * it would not have in the cluster. Needs root and the memory controller (cgroup v2, or v1's memory hierarchy).
 */
import { mkdir, rmdir, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';

export interface MemoryLimit {
  /** Prefix of the command line: the command that follows runs in the cgroup (same pid: the shell execs it). */
  launcher: string[];
  /** Removes the cgroup once its processes ended; never throws. */
  remove(): Promise<void>;
}

const V2_ROOT = '/sys/fs/cgroup';
const V1_MEMORY = '/sys/fs/cgroup/memory';

/**
 * A cgroup named `name` limited to `bytes`, or undefined (with the reason) where this process may not make one.
 */
export async function memoryLimit(name: string, bytes: number): Promise<MemoryLimit | { unavailable: string }> {
  const v2 = existsSync(path.join(V2_ROOT, 'cgroup.controllers'));
  const dir = path.join(v2 ? V2_ROOT : V1_MEMORY, name);
  try {
    if (!v2 && !existsSync(V1_MEMORY)) return { unavailable: 'no memory cgroup controller' };
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, v2 ? 'memory.max' : 'memory.limit_in_bytes'), String(bytes));
  } catch (error) {
    return { unavailable: `cannot make cgroup ${dir}: ${(error as Error).message}` };
  }
  return {
    launcher: ['sh', '-c', `echo $$ > ${path.join(dir, 'cgroup.procs')} && exec "$0" "$@"`],
    remove: () => rmdir(dir).catch(() => undefined),
  };
}
