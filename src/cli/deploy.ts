import { Command } from 'commander';
import { deployTarget } from '../deploy/deploy.ts';
import {
  addApplyFlags,
  addResultFlags,
  addTargetFlags,
  confirm,
  toApplyBehaviour,
  renderAndRunFromFlags,
  type ApplyFlags,
  type ResultFlags,
  type TargetFlags,
  cliTargetLock,
  loadAppliedObjects,
} from './options.ts';
import { parseDuration } from '../duration.ts';
import { runResultCommand } from './run-action.ts';

interface DeployFlags extends TargetFlags, ApplyFlags, ResultFlags {
  dryRun?: boolean;
  prune?: boolean;
  yes?: boolean;
  wait: boolean;
  timeout: string;
}

export function deployCommand(): Command {
  const command = new Command('deploy');
  addApplyFlags(addResultFlags(addTargetFlags(command)))
    .option('--dry-run', 'server-side dry run: show what would change, persist nothing')
    .option('--prune', 'also delete orphan objects (the target owns them, the render no longer produces them)')
    .option('-y, --yes', 'do not ask before deleting orphans')
    .option('--no-wait', 'do not wait for readiness')
    .option('--timeout <duration>', 'limit for readiness waits and deletions', '10m')
    .action((flags: DeployFlags) =>
      runResultCommand('deploy', flags, (run) =>
        renderAndRunFromFlags(flags, run, async (pending, cluster, signal) => {
          const { engine, progress } = run;
          const applied = await loadAppliedObjects(cluster, pending.discriminator, engine);
          const result = await deployTarget(pending, cluster, {
            dryRun: flags.dryRun ?? false,
            prune: flags.prune ?? false,
            wait: flags.wait,
            timeoutMs: parseDuration(flags.timeout),
            behaviour: toApplyBehaviour(flags),
            confirmPrune: (count) =>
              confirm(`Delete ${count} orphan object(s)?${flags.dryRun ? ' (dry run: nothing will be deleted)' : ''}`, flags.yes ?? false),
            fieldManager: engine.config.fieldManager,
            progress,
            signal,
            lock: cliTargetLock('deploy', parseDuration(flags.timeout)),
            applied,
          });
          if (!flags.dryRun) await applied.save();
          return result;
        }),
      ),
    );
  return command;
}
