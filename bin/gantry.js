#!/usr/bin/env node
// Gantry's sources are TypeScript that Node 24 runs directly (type stripping), so there is no build step.
// Started by an older Node (e.g. the machine's), it re-launches itself on the Node 24 the project installs.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import module from 'node:module';
import { fileURLToPath } from 'node:url';

const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  const node24 = fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url));
  if (!existsSync(node24)) {
    process.stderr.write(
      `gantry needs Node.js 24 or newer (this is ${process.version}); run npm install in ${fileURLToPath(new URL('..', import.meta.url))}\n`,
    );
    process.exit(1);
  }
  const child = spawnSync(node24, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(child.status ?? 1);
}

// Caches compiled modules on disk: loading @kubernetes/client-node alone otherwise costs half a second per run.
module.enableCompileCache?.();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv);
