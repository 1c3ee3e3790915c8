/**
 * `npm test` after the type check: vitest's projects (vitest.config.ts) in three steps, so that the end-to-end files
 * use both cores. vitest runs the projects of one `sequence.groupOrder` as one queue under one worker limit, so the
 * two end-to-end groups, which must each run one file at a time but may run beside each other, run here as two
 * vitest processes at once:
 * 1. the self-contained files (two workers; the first run's global setup builds and starts everything);
 * 2. `end-to-end (local)` and `end-to-end (test-engine)` side by side, each line of theirs prefixed with its group;
 * 3. the files that restart the shared PostgreSQL server, alone.
 * Every step runs even when an earlier one failed, so one run shows every failure; the exit code is non-zero when any
 * failed. Arguments are passed to every vitest run (e.g. `--reporter=verbose`).
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { END_TO_END_PROJECTS, RESTARTS_SHARED_SERVERS_PROJECT, SELF_CONTAINED_PROJECT } from '../vitest.config.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VITEST = fileURLToPath(new URL('../node_modules/.bin/vitest', import.meta.url));

/** Runs one vitest process over `project`; resolves with its exit code. `prefix` marks its lines when it runs beside another. */
function vitest(project: string, extra: readonly string[], prefix?: string): Promise<number> {
  const child = spawn(VITEST, ['run', '--project', project, ...extra], {
    cwd: ROOT,
    stdio: prefix ? ['ignore', 'pipe', 'pipe'] : 'inherit',
  });
  if (prefix && child.stdout && child.stderr) {
    for (const [stream, out] of [
      [child.stdout, process.stdout],
      [child.stderr, process.stderr],
    ] as const) {
      createInterface({ input: stream }).on('line', (line) => out.write(`${prefix} ${line}\n`));
    }
  }
  return new Promise((resolve) => child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
}

const extra = process.argv.slice(2);
const codes = [await vitest(SELF_CONTAINED_PROJECT, extra)];
codes.push(...(await Promise.all(END_TO_END_PROJECTS.map((project) => vitest(project, extra, `[${project}]`)))));
codes.push(await vitest(RESTARTS_SHARED_SERVERS_PROJECT, extra));
process.exitCode = codes.find((code) => code !== 0) ?? 0;
