import { Command } from 'commander';
import { deleteTarget } from '../deploy/prune.ts';
import { requireCluster } from '../target/prepare.ts';
import { prepareFromFlags } from './options.ts';
import { addDeletionFlags, deletionOptions, type DeletionFlags } from './prune.ts';
import { runResultCommand } from './run-action.ts';

export function deleteCommand(): Command {
  const command = new Command('delete');
  addDeletionFlags(command).action((flags: DeletionFlags) =>
    runResultCommand('delete', flags, async (run) => {
      const prepared = await prepareFromFlags(flags, run.engine, run.progress, { signal: run.signal });
      const result = await deleteTarget(prepared.rendered, requireCluster(prepared), deletionOptions('delete', flags, run));
      return { prepared, result };
    }),
  );
  return command;
}
