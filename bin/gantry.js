#!/usr/bin/env node
// In this repository Node 24 runs Gantry's TypeScript sources directly (type stripping); the npm package ships them
// compiled to lib/ instead (scripts/package/build.ts), because Node strips no types under node_modules.
// Started by an older Node in this repository (e.g. the machine's), it re-launches itself on the Node 24 the
// repository installs, forwards the signals it gets to that child, and ends as the child ended.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import module from 'node:module';
import { constants } from 'node:os';
import { delimiter } from 'node:path';
import { fileURLToPath } from 'node:url';

const sources = new URL('../src/cli/main.ts', import.meta.url);
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  const node24 = fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url));
  if (!existsSync(sources) || !existsSync(node24)) {
    process.stderr.write(`gantry needs Node.js 24 or newer (this is ${process.version}): install it from https://nodejs.org\n`);
    process.exit(1);
  }
  relaunch(node24);
} else {
  await run();
}

/**
 * Runs this script on `node24` and ends with the child's exit code, or killed by the signal that killed it. SIGINT,
 * SIGTERM and SIGHUP are passed on, which spawnSync could not do: a deploy stopped so prints what it did and releases
 * the target's lock. GANTRY_SIGNALS_FORWARDED tells the child that a terminal's Ctrl-C reaches it twice (from the
 * terminal and from here), which it then takes for one (src/cli/signals.ts).
 */
function relaunch(node24) {
  const child = spawn(node24, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, GANTRY_SIGNALS_FORWARDED: '1' },
  });
  const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const signal of forwarded) process.on(signal, () => child.kill(signal));
  child.on('error', (error) => {
    process.stderr.write(`gantry: cannot start ${node24}: ${error.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (code !== null) process.exit(code);
    // Without this process's own handler, the signal ends it as it ended the child, and its parent sees that; one
    // Node ignores (SIGPIPE) leaves the shell's code for it.
    for (const name of forwarded) process.removeAllListeners(name);
    process.kill(process.pid, signal);
    process.exit(128 + constants.signals[signal]);
  });
}

async function run() {
  // In this repository, programs PATH lacks (helm, kustomize, kubectl, ...) come from the ones setup built.
  if (existsSync(sources))
    process.env.PATH = [process.env.PATH, fileURLToPath(new URL('../.cluster/bin', import.meta.url))].join(delimiter);

  // Caches compiled modules on disk: loading @kubernetes/client-node alone otherwise costs half a second per run.
  module.enableCompileCache?.();
  const { main } = await import(existsSync(sources) ? await repositoryEntry() : '../lib/cli/main.js');
  process.exitCode = await main(process.argv);
}

/**
 * The bundle setup builds (scripts/bundle/) while every source it was built from is unchanged, the sources
 * otherwise: the bundle is a few dozen modules to load instead of ~2,100.
 */
async function repositoryEntry() {
  const { currentBundleEntry } = await import('../scripts/bundle/current.ts');
  return currentBundleEntry() ?? sources.href;
}
