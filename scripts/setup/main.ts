/**
 * `node scripts/setup/main.ts`: the part of scripts/setup.sh that runs on Node 24 (see setup.ts for what it does).
 */
import { setUpMachine } from './setup.ts';

const started = performance.now();
try {
  await setUpMachine((line) => console.error(`setup: ${line}`));
  console.error(`setup: ready in ${((performance.now() - started) / 1000).toFixed(1)}s`);
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
}
