/**
 * `gantry version`: Gantry's version (`-o json` for machines), which its image is tagged with and agents report.
 */
import { Command } from 'commander';
import { GANTRY_VERSION } from '../version.ts';
import { addFleetOutputFlag, type FleetOutput, printFleet } from './fleet-output.ts';

export function versionCommand(): Command {
  return addFleetOutputFlag(new Command('version').description("print Gantry's version")).action((flags: { output: FleetOutput }) =>
    printFleet(flags.output, { version: GANTRY_VERSION }, () => `gantry ${GANTRY_VERSION}\n`),
  );
}
