import { Command } from 'commander';
import { validateTarget } from '../deploy/validate.ts';
import { requireCluster } from '../target/prepare.ts';
import { addResultFlags, addTargetFlags, prepareFromFlags, type ResultFlags, type TargetFlags } from './options.ts';
import { parseDuration } from '../duration.ts';
import { runResultCommand } from './run-action.ts';

export function validateCommand(): Command {
  const command = new Command('validate');
  addResultFlags(addTargetFlags(command))
    .option('--wait <duration>', 'keep checking until valid or this much time passed', '0s')
    .action((flags: TargetFlags & ResultFlags & { wait: string }) =>
      runResultCommand('validate', flags, async ({ engine, progress, signal }) => {
        const prepared = await prepareFromFlags(flags, engine, progress, { signal });
        const result = await validateTarget(prepared.rendered, requireCluster(prepared), {
          waitMs: parseDuration(flags.wait),
          progress,
          signal,
        });
        return { prepared, result };
      }),
    );
  return command;
}
