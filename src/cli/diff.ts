import { Command } from 'commander';
import { deployTarget } from '../deploy/deploy.ts';
import {
  addApplyFlags,
  addResultFlags,
  addTargetFlags,
  toApplyBehaviour,
  prepareFromFlags,
  requireCluster,
  loadAppliedObjects,
  type ApplyFlags,
  type ResultFlags,
  type TargetFlags,
} from './options.ts';
import { runResultCommand } from './run-action.ts';

export function diffCommand(): Command {
  const command = new Command('diff');
  addApplyFlags(addResultFlags(addTargetFlags(command))).action((flags: TargetFlags & ApplyFlags & ResultFlags) =>
    runResultCommand('diff', flags, async ({ engine, progress }) => {
      const prepared = await prepareFromFlags(flags, engine, progress);
      const result = await deployTarget(prepared.rendered, requireCluster(prepared), {
        dryRun: true,
        prune: false,
        wait: false,
        timeoutMs: 10 * 60_000,
        behaviour: toApplyBehaviour(flags),
        fieldManager: engine.config.fieldManager,
        progress,
        applied: await loadAppliedObjects(prepared, engine),
      });
      return { prepared, result };
    }),
  );
  return command;
}
