import { Command } from 'commander';
import { prepareTarget } from '../deploy/prepare.ts';
import { deleteTarget } from '../deploy/prune.ts';
import { toTargetOptions } from './options.ts';
import { parseDuration } from '../duration.ts';
import { addDeletionFlags, confirmDeletion, type DeletionFlags } from './prune.ts';
import { runResultCommand } from './run-action.ts';

export function deleteCommand(): Command {
  const command = new Command('delete').description('delete every object of the target (found by its discriminator), Namespaces last');
  addDeletionFlags(command).action((flags: DeletionFlags) =>
    runResultCommand('delete', flags, async (progress) => {
      const prepared = await prepareTarget(toTargetOptions(flags), progress);
      return {
        prepared,
        result: await deleteTarget(
          prepared,
          { dryRun: flags.dryRun ?? false, timeoutMs: parseDuration(flags.timeout), confirm: (refs) => confirmDeletion(refs, flags) },
          progress,
        ),
      };
    }),
  );
  return command;
}
