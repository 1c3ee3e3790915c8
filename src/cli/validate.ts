import { Command } from 'commander';
import { prepareTarget } from '../deploy/prepare.ts';
import { validateTarget } from '../deploy/validate.ts';
import { addOutputFlag, addTargetFlags, parseDuration, toTargetOptions, type TargetFlags } from './options.ts';
import { runResultCommand } from './run-action.ts';

export function validateCommand(): Command {
  const command = new Command('validate').description('check that every object of the target exists and is ready');
  addOutputFlag(addTargetFlags(command))
    .option('--wait <duration>', 'keep checking until valid or this much time passed', '0s')
    .action((flags: TargetFlags & { wait: string }) =>
      runResultCommand(flags.output, async (progress) => {
        const prepared = await prepareTarget(toTargetOptions(flags), progress);
        return validateTarget(prepared, { waitMs: parseDuration(flags.wait) }, progress);
      }),
    );
  return command;
}
