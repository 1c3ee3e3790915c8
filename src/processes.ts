/**
 * Long-lived local processes (the clusters' components, `gantry up --runtime local`): started detached (they outlive `up`), identified later by pid AND
 * command line so that `down` never signals an unrelated process that reused a recorded pid.
 */
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ProcessUser, start } from './exec.ts';

/** A started component as recorded in state.json. */
export interface ComponentProcess {
  /** Component name, also its log file's name (`<logs>/<name>.log`). */
  name: string;
  pid: number;
  /** The executable path it was started with (argv[0]), checked before any signal is sent. */
  command: string;
}

/**
 * Starts `command args...` in its own process group with stdout and stderr written to `<logDir>/<name>.log`,
 * as `user` when given.
 * @throws Error when the program could not be started (e.g. not built: run scripts/setup.sh).
 */
export function startComponent(
  name: string,
  command: string,
  args: readonly string[],
  logDir: string,
  user?: ProcessUser,
): ComponentProcess {
  const logFd = openSync(join(logDir, `${name}.log`), 'w');
  try {
    const child = start(command, args, { logFd, detached: true, user });
    // A failed spawn (no pid) also emits 'error' later, which would crash this process if nobody listened.
    child.once('error', () => {});
    if (child.pid === undefined) throw new Error(`could not start ${name} (${command}); run sh scripts/setup.sh`);
    return { name, pid: child.pid, command };
  } finally {
    closeSync(logFd);
  }
}

/** Whether the recorded process is still alive (not a zombie) and still runs the recorded command. */
export function isRunning(component: ComponentProcess): boolean {
  try {
    const stat = readFileSync(`/proc/${component.pid}/stat`, 'utf8');
    // Field 3, after the parenthesised command name, is the state; Z (zombie) and X (dead) have exited.
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z' || state === 'X') return false;
    const argv0 = readFileSync(`/proc/${component.pid}/cmdline`, 'utf8').split('\0')[0];
    return argv0 === component.command;
  } catch {
    return false;
  }
}

/**
 * Stops a recorded process if it is still running: `first` (SIGTERM), then SIGKILL after `graceMs` milliseconds.
 * Resolves once it is gone.
 */
export async function stopComponent(component: ComponentProcess, graceMs: number, first: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!signal(component, first)) return;
  if (await exited(component, graceMs)) return;
  signal(component, 'SIGKILL');
  await exited(component, 5_000);
}

function signal(component: ComponentProcess, name: NodeJS.Signals): boolean {
  if (!isRunning(component)) return false;
  try {
    process.kill(component.pid, name);
    return true;
  } catch {
    return false;
  }
}

async function exited(component: ComponentProcess, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (!isRunning(component)) return true;
    await sleep(50);
  }
  return !isRunning(component);
}

/** Resident memory of a process in bytes (VmRSS), or undefined when it is gone. */
export function residentBytes(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
