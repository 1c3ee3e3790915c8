#!/usr/bin/env node
// In this repository Node 24 runs Gantry's TypeScript sources directly (type stripping); the npm package ships them
// compiled to lib/ instead (scripts/package/build.ts), because Node strips no types under node_modules.
// Started by an older Node in this repository (e.g. the machine's), it re-launches itself on the Node 24 the
// repository installs.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import module from 'node:module';
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
  const child = spawnSync(node24, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(child.status ?? 1);
}

// In this repository, programs PATH lacks (helm, kustomize, kubectl, ...) come from the ones setup built.
if (existsSync(sources)) process.env.PATH = [process.env.PATH, fileURLToPath(new URL('../.cluster/bin', import.meta.url))].join(delimiter);

// Caches compiled modules on disk: loading @kubernetes/client-node alone otherwise costs half a second per run.
module.enableCompileCache?.();
const { main } = await import(existsSync(sources) ? await repositoryEntry() : '../lib/cli/main.js');
process.exitCode = await main(process.argv);

/**
 * The bundle setup builds (scripts/bundle/) while every source it was built from is unchanged, the sources
 * otherwise: the bundle is a few dozen modules to load instead of ~2,100.
 */
async function repositoryEntry() {
  const { currentBundleEntry } = await import('../scripts/bundle/current.ts');
  return currentBundleEntry() ?? sources.href;
}
