import { Command } from 'commander';
import { deployTarget } from '../deploy/deploy.ts';
import {
  addApplyFlags,
  addResultFlags,
  addTargetFlags,
  toApplyBehaviour,
  renderAndRunFromFlags,
  loadAppliedObjects,
  type ApplyFlags,
  type ResultFlags,
  type TargetFlags,
} from './options.ts';
import { runResultCommand } from './run-action.ts';

export function diffCommand(): Command {
  const command = new Command('diff');
  addApplyFlags(addResultFlags(addTargetFlags(command))).action((flags: TargetFlags & ApplyFlags & ResultFlags) =>
    runResultCommand('diff', { ...flags, dryRun: true }, (run) =>
      renderAndRunFromFlags(flags, run, async (pending, cluster, signal) =>
        deployTarget(pending, cluster, {
          dryRun: true,
          prune: false,
          wait: false,
          timeoutMs: 10 * 60_000,
          behaviour: toApplyBehaviour(flags),
          fieldManager: run.engine.config.fieldManager,
          progress: run.progress,
          signal,
          applied: await loadAppliedObjects(cluster, pending.discriminator, run.engine),
        }),
      ),
    ),
  );
  return command;
}
