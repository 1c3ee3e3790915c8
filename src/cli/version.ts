/**
 * `gantry version`: Gantry's version (which its image is tagged with and agents report), Node's, and those of the
 * programs renders run (Python with Jinja2, helm, kustomize, sops), each as a render would find it; `-o json` for
 * machines. A missing program is reported with how to get it, not as a failure.
 */
import { Command } from 'commander';
import { cliEngineConfig } from '../engine-config.ts';
import { Tools } from '../tools.ts';
import { collectVersions, type ProgramVersion, type Versions } from '../versions.ts';
import { addFleetOutputFlag, type FleetOutput, printFleet } from './fleet-output.ts';

export function versionCommand(): Command {
  return addFleetOutputFlag(new Command('version')).action(async (flags: { output: FleetOutput }) => {
    const config = cliEngineConfig();
    const versions = await collectVersions(new Tools(config.tools, config.childEnv), config.pythonEnvCache);
    printFleet(flags.output, versions, () => versionsText(versions));
  });
}

function versionsText(versions: Versions): string {
  const python = versions.python;
  const rows: Array<[string, string]> = [
    ['gantry', versions.gantry],
    ['node', versions.node],
    [
      'python',
      'pending' in python
        ? `not yet made: ${python.path}, ${python.pending}`
        : describe(python, python.jinja2 ? `Jinja2 ${python.jinja2}` : 'no Jinja2'),
    ],
    ['helm', describe(versions.helm)],
    ['kustomize', describe(versions.kustomize)],
    ['sops', describe(versions.sops)],
  ];
  return rows.map(([name, text]) => `${name.padEnd(10)} ${text}\n`).join('');
}

function describe(program: ProgramVersion, extra?: string): string {
  if ('missing' in program) return `missing: ${program.missing}`;
  return `${program.version}${extra ? `, ${extra}` : ''} (${program.path})`;
}
