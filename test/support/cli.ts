/**
 * End-to-end tests drive Gantry as a user does, through its binary, and check the cluster with the real kubectl.
 */
import { waitFor } from '../../src/controller/test-support.ts';
import { EventEmitter, once } from 'node:events';
import path from 'node:path';
import { execa } from 'execa';
import { REPO_ROOT } from './fixtures.ts';

/** A long-running `gantry` process (a server, an agent) whose output the test reads while it runs. */
export interface GantryProcess {
  /** Everything written so far. */
  output: { stdout: string; stderr: string };
  /** Resolves with the first match of `pattern` in the stream, waiting for it. @throws when the process exits first. */
  waitForOutput(stream: 'stdout' | 'stderr', pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code once it has exited by itself. */
  exited: Promise<number>;
  /** SIGTERM, then resolves when it has exited. */
  stop(): Promise<void>;
  /**
   * Sends `name` to the process, or with `group` to every process of its group (started with `processGroup`), as a
   * terminal sends Ctrl-C to its foreground job: gantry, a re-launched gantry, its Jinja2 workers and helm.
   */
  signal(name: NodeJS.Signals, options?: { group?: boolean }): void;
}

export interface StartOptions {
  env?: Record<string, string>;
  /** The Node that runs bin/gantry.js; an older one than the repository's makes it re-launch itself. */
  node?: string;
  /** Its own process group, as a shell starts a job, for signal(name, { group: true }). */
  processGroup?: boolean;
}

/** Starts `gantry <args>`; the caller stops it. */
export function startGantry(args: readonly string[], options: StartOptions = {}): GantryProcess {
  const child = execa(options.node ?? NODE, [BIN, ...args], {
    env: { KUBECONFIG, ...options.env },
    reject: false,
    buffer: false,
    detached: options.processGroup ?? false,
  });
  const output = { stdout: '', stderr: '' };
  let exited = false;
  const changed = new EventEmitter();
  child.stdout?.on('data', (chunk: Buffer) => ((output.stdout += chunk.toString()), changed.emit('data')));
  child.stderr?.on('data', (chunk: Buffer) => ((output.stderr += chunk.toString()), changed.emit('data')));
  const exitCode = child.then((result) => ((exited = true), changed.emit('data'), result.exitCode ?? -1));
  return {
    output,
    exited: exitCode,
    async waitForOutput(stream, pattern, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const match = pattern.exec(output[stream]);
        if (match) return match;
        if (exited) throw new Error(`gantry ${args.join(' ')} exited before printing ${pattern}:\n${output.stderr}`);
        if (Date.now() > deadline) throw new Error(`gantry ${args.join(' ')} did not print ${pattern} within ${timeoutMs} ms`);
        await once(changed, 'data', { signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())) }).catch(() => undefined);
      }
    },
    async stop() {
      child.kill('SIGTERM');
      await child;
    },
    signal(name, { group = false } = {}) {
      if (group && !options.processGroup) throw new Error('signal(name, { group: true }) needs startGantry(args, { processGroup: true })');
      process.kill(group ? -(child.pid as number) : (child.pid as number), name);
    },
  };
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** The local cluster of this test file: $KUBECONFIG, which vitest.config.ts sets per group of files. */
export const KUBECONFIG = process.env['KUBECONFIG'] ?? path.join(REPO_ROOT, '.cluster/kubeconfig');
const BIN = path.join(REPO_ROOT, 'bin/gantry.js');
const NODE = path.join(REPO_ROOT, 'node_modules/.bin/node');
/** The kubectl the local cluster's setup built (the machine's own may be years older). */
const KUBECTL = path.join(REPO_ROOT, '.cluster/bin/kubectl');

/**
 * Runs `gantry <args>` against the file's local cluster (with `env` added to its environment, `input` on its stdin) and
 * returns its exit code and output.
 */
export async function gantry(
  args: readonly string[],
  options: { cwd?: string; env?: Record<string, string>; input?: string } = {},
): Promise<CliRun> {
  const result = await execa(NODE, [BIN, ...args], {
    cwd: options.cwd,
    env: { KUBECONFIG, ...options.env },
    ...(options.input === undefined ? {} : { input: options.input }),
    reject: false,
    stripFinalNewline: false,
  });
  return { code: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/** Runs a command that prints a `-o json` result and returns the parsed document, failing on a non-JSON answer. */
export async function gantryJson(
  args: readonly string[],
  options: { cwd?: string } = {},
): Promise<{ code: number; result: JsonResult; stderr: string }> {
  const run = await gantry([...args, '-o', 'json'], options);
  try {
    return { code: run.code, result: JSON.parse(run.stdout) as JsonResult, stderr: run.stderr };
  } catch {
    throw new Error(`gantry ${args.join(' ')} did not print JSON (exit ${run.code}):\n${run.stdout}\n${run.stderr}`);
  }
}

export interface JsonRef {
  group: string;
  version: string;
  kind: string;
  namespace: string;
  name: string;
}

export interface JsonResult {
  newObjects: JsonRef[];
  changedObjects: Array<JsonRef & { diff: string }>;
  deletedObjects: JsonRef[];
  orphanObjects: JsonRef[];
  appliedHooks: JsonRef[];
  warnings: Array<{ object?: JsonRef; message: string }>;
  errors: Array<{ object?: JsonRef; message: string }>;
  /** True in a dry run's result (diff, --dry-run), absent otherwise. */
  dryRun?: boolean;
}

/** `kubectl <args> -o json` against the local cluster, parsed. */
export async function kubectlJson<T = { items: Array<Record<string, any>> }>(args: readonly string[]): Promise<T> {
  const result = await execa(KUBECTL, [...args, '-o', 'json'], { env: { KUBECONFIG } });
  return JSON.parse(result.stdout) as T;
}

/** `kubectl <args>` against the local cluster; returns stdout. */
export async function kubectl(args: readonly string[], input?: string): Promise<string> {
  return (await execa(KUBECTL, args, { env: { KUBECONFIG }, input })).stdout;
}

/**
 * Resolves once the namespace does not exist (test files that share one, deleting it without waiting, start on a
 * clean cluster). @throws Error after `timeoutMs`.
 */
export async function namespaceGone(name: string, timeoutMs = 120_000): Promise<void> {
  const listed = () => kubectl(['get', 'namespace', '--field-selector', `metadata.name=${name}`, '-o', 'name']);
  await waitFor(`namespace ${name} to be gone`, async () => (await listed()) === '', timeoutMs);
}

/** The current context of the local cluster's kubeconfig (the fixtures' targets name a context of their own). */
export async function localContext(): Promise<string> {
  return kubectl(['config', 'current-context']);
}

/** `kind/name` strings of refs, sorted, for readable assertions. */
export function names(refs: readonly JsonRef[]): string[] {
  return refs.map((ref) => `${ref.namespace ? `${ref.namespace}/` : ''}${ref.kind}/${ref.name}`).sort();
}
