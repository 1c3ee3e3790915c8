/**
 * `npm run fleet -- down|status`: the demo's server and agents (see fleet.ts); `npm run demo` starts them.
 */
import { isRunning } from '../../src/processes.ts';
import { fleetDown, fleetLayout, readFleetState } from './fleet.ts';

const command = process.argv[2];
if (command === 'down') {
  await fleetDown((line) => console.error(`fleet: ${line}`));
} else if (command === 'status') {
  const state = await readFleetState();
  if (!state) console.log('fleet: not running');
  else {
    console.log(`fleet: server ${state.server} (logs in ${fleetLayout().logs})`);
    for (const [name, process] of Object.entries(state.processes))
      console.log(`  ${name.padEnd(16)} pid ${String(process.pid).padEnd(8)} ${isRunning(process) ? 'running' : 'gone'}`);
  }
} else {
  console.error('usage: npm run fleet -- down | status');
  process.exitCode = 1;
}
