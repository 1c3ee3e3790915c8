import { Command } from 'commander';
import { pruneTarget, type DeletionCommandOptions } from '../deploy/prune.ts';
import { requireCluster } from '../target/prepare.ts';
import { addResultFlags, addTargetFlags, confirm, prepareFromFlags, type ResultFlags, type TargetFlags, cliTargetLock } from './options.ts';
import { parseDuration } from '../duration.ts';
import { runResultCommand } from './run-action.ts';
import type { CliRun } from './cli-run.ts';
import { formatRef } from '../kube/object.ts';

interface DeletionFlags extends TargetFlags, ResultFlags {
  dryRun?: boolean;
  yes?: boolean;
  timeout: string;
}

export function pruneCommand(): Command {
  const command = new Command('prune');
  addDeletionFlags(command).action((flags: DeletionFlags) =>
    runResultCommand('prune', flags, async (run) => {
      const prepared = await prepareFromFlags(flags, run.engine, run.progress, { signal: run.signal });
      const result = await pruneTarget(prepared.rendered, requireCluster(prepared), deletionOptions('prune', flags, run));
      return { prepared, result };
    }),
  );
  return command;
}

/** What prune and delete run with. */
export function deletionOptions(command: string, flags: DeletionFlags, { engine, progress, signal }: CliRun): DeletionCommandOptions {
  return {
    dryRun: flags.dryRun ?? false,
    timeoutMs: parseDuration(flags.timeout),
    confirm: (refs) => confirmDeletion(refs, flags),
    fieldManager: engine.config.fieldManager,
    progress,
    signal,
    lock: cliTargetLock(command, parseDuration(flags.timeout)),
  };
}

/** The flags prune and delete share. */
export function addDeletionFlags(command: Command): Command {
  return addResultFlags(addTargetFlags(command))
    .option('--dry-run', 'show what would be deleted, delete nothing')
    .option('-y, --yes', 'do not ask before deleting')
    .option('--timeout <duration>', 'how long to wait for deleted objects to disappear', '10m');
}

/**
 * Asks before deleting `refs` unless `--yes`. A dry run asks as the real command does, so that adding or dropping
 * `--dry-run` never changes what a script must answer.
 */
export function confirmDeletion(
  refs: readonly Parameters<typeof formatRef>[0][],
  flags: { yes?: boolean; dryRun?: boolean },
): Promise<boolean> {
  const dryRun = flags.dryRun ? ' (dry run: nothing will be deleted)' : '';
  process.stderr.write(`Objects to delete${dryRun}:\n${refs.map((ref) => `  ${formatRef(ref)}\n`).join('')}`);
  return confirm(`Delete these ${refs.length} object(s)?${dryRun}`, flags.yes ?? false);
}

export type { DeletionFlags };
