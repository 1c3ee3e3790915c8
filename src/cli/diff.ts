import { Command } from 'commander';
import { deployTarget } from '../deploy/deploy.ts';
import { prepareTarget } from '../deploy/prepare.ts';
import { addOutputFlag, addTargetFlags, toTargetOptions, type TargetFlags } from './options.ts';
import { runResultCommand } from './run-action.ts';

export function diffCommand(): Command {
  const command = new Command('diff').description('show what deploy would change (a server-side dry-run apply), one unified diff per changed object');
  addOutputFlag(addTargetFlags(command)).action((flags: TargetFlags) =>
    runResultCommand(flags.output, async (progress) => {
      const prepared = await prepareTarget(toTargetOptions(flags), progress);
      return deployTarget(prepared, { dryRun: true, prune: false, wait: false, timeoutMs: 0 }, progress);
    }),
  );
  return command;
}
