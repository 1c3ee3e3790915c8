import { Command } from 'commander';
import { deployTarget } from '../deploy/deploy.ts';
import { prepareTarget } from '../deploy/prepare.ts';
import {
  addApplyFlags,
  addResultFlags,
  addTargetFlags,
  toApplyBehaviour,
  toTargetOptions,
  type ApplyFlags,
  type ResultFlags,
  type TargetFlags,
} from './options.ts';
import { runResultCommand } from './run-action.ts';

export function diffCommand(): Command {
  const command = new Command('diff').description(
    'show what deploy would change (a server-side dry-run apply), one unified diff per changed object',
  );
  addApplyFlags(addResultFlags(addTargetFlags(command))).action((flags: TargetFlags & ApplyFlags & ResultFlags) =>
    runResultCommand('diff', flags, async (progress) => {
      const prepared = await prepareTarget(toTargetOptions(flags), progress);
      return {
        prepared,
        result: await deployTarget(
          prepared,
          { dryRun: true, prune: false, wait: false, timeoutMs: 10 * 60_000, behaviour: toApplyBehaviour(flags) },
          progress,
        ),
      };
    }),
  );
  return command;
}
