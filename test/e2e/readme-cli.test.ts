/**
 * The README's commands as a reader on a fresh machine runs them: with the machine's own Node (older than 24 here)
 * first on PATH and an empty npm cache, the way the README starts the CLI from this checkout prints what was asked
 * and no npm noise (npx printed EBADENGINE warnings for Gantry's `engines` before every first run).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/fixtures.ts';

/** The first folder on PATH holding a `node` that is not this checkout's Node 24. */
function machineNodeDir(): string {
  const dirs = (process.env['PATH'] ?? '').split(path.delimiter).filter((dir) => dir && !path.resolve(dir).startsWith(REPO_ROOT));
  const found = dirs.find((dir) => existsSync(path.join(dir, 'node')));
  if (!found) throw new Error(`no node on PATH outside ${REPO_ROOT}`);
  return found;
}

/**
 * How the README starts the CLI from this checkout (`bin/gantry.js`, or `npx gantry` before): the distinct words
 * before the subcommand in its shell blocks, leaving out the `gantry` an `npm install -g` puts on PATH.
 */
async function readmeLaunchers(): Promise<string[]> {
  const readme = await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1] as string);
  const launchers = blocks
    .flatMap((block) => block.split('\n'))
    .map((line) => /^((?:npx )?\S*gantry(?:\.js)?) [a-z]/.exec(line)?.[1])
    .filter((launcher): launcher is string => launcher !== undefined && launcher !== 'gantry');
  return [...new Set(launchers)];
}

let npmCache = '';
beforeAll(async () => {
  npmCache = await mkdtemp(path.join(os.tmpdir(), 'gantry-npm-cache-'));
});
afterAll(() => rm(npmCache, { recursive: true, force: true }));

it(
  "the README's way to run the checkout's CLI prints its version and no npm warning on the machine's Node",
  { timeout: 120_000 },
  async () => {
    const nodeDir = machineNodeDir();
    const machineNode = (await execa(path.join(nodeDir, 'node'), ['--version'])).stdout;
    const launchers = await readmeLaunchers();
    expect(launchers.length).toBeGreaterThan(0);
    for (const launcher of launchers) {
      const run = await execa('sh', ['-c', `${launcher} version`], {
        cwd: REPO_ROOT,
        env: { PATH: [nodeDir, '/usr/bin', '/bin'].join(path.delimiter), HOME: os.homedir(), npm_config_cache: npmCache },
        extendEnv: false,
        reject: false,
      });
      expect({ launcher, machineNode, code: run.exitCode, stderr: run.stderr }).toEqual({ launcher, machineNode, code: 0, stderr: '' });
      expect(run.stdout).toMatch(/^gantry +0\.\d+\.\d+/);
      expect(run.stdout).toMatch(/^node +v24\./m);
    }
  },
);
