/**
 * crane, go-containerregistry's command line (built by scripts/setup, see tools.ts), which does every OCI step of the
 * image build: it assembles images from layer tarballs, sets their configuration, and copies and pulls them. Here
 * too the in-process registry it serves, where an image is assembled before it is copied to its destination.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { run, start } from '../../src/exec.ts';
import { toolDir } from '../setup/cache.ts';
import { TOOLS } from '../setup/tools.ts';

/** The crane binary in the tool cache. */
export function craneBinary(): string {
  const tool = TOOLS.find((candidate) => candidate.name === 'crane');
  if (!tool) throw new Error('scripts/setup/tools.ts has no tool crane');
  return join(toolDir(tool.name, tool.version), 'bin', tool.name);
}

/**
 * Runs `crane args...` and returns its stdout, trimmed.
 * @throws CommandError with crane's stderr.
 */
export async function crane(args: readonly string[]): Promise<string> {
  return (await run(craneBinary(), args)).stdout.trim();
}

export interface StagingRegistry {
  /** `127.0.0.1:<port>`, which crane talks to over plain HTTP (as to every loopback registry). */
  host: string;
  stop(): Promise<void>;
}

/**
 * Starts `crane registry serve` on a free 127.0.0.1 port, keeping blobs in `dir`.
 * @throws Error with crane's output when it has not said within 30 s on which port it serves.
 */
export async function startStagingRegistry(dir: string): Promise<StagingRegistry> {
  await mkdir(dir, { recursive: true });
  const child = start(craneBinary(), ['registry', 'serve', '--address=127.0.0.1:0', `--disk=${dir}`]);
  // Both streams keep flowing while it runs: the registry logs every request, and a full pipe would stall it.
  child.stdout?.resume();
  let output = '';
  const port = await new Promise<string>((resolve, reject) => {
    const settle = (finish: () => void) => {
      clearTimeout(timer);
      child.stderr?.off('data', onData).resume();
      child.off('exit', onExit);
      finish();
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const served = /serving on port (\d+)/.exec(output)?.[1];
      if (served) settle(() => resolve(served));
    };
    const onExit = (code: number | null) => settle(() => reject(new Error(`crane registry serve exited with code ${code}:\n${output}`)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      settle(() => reject(new Error(`crane registry serve did not say its port within 30 s:\n${output}`)));
    }, 30_000);
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
  });
  return { host: `127.0.0.1:${port}`, stop: () => stop(child) };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
