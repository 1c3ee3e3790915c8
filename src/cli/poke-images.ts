import { Command } from 'commander';
import { pokeImages } from '../deploy/poke-images.ts';
import { requireCluster } from '../target/prepare.ts';
import { addResultFlags, addTargetFlags, prepareFromFlags, type ResultFlags, type TargetFlags } from './options.ts';
import { runResultCommand } from './run-action.ts';

export function pokeImagesCommand(): Command {
  const command = new Command('poke-images');
  addResultFlags(addTargetFlags(command))
    .option('--dry-run', 'show the changes, persist nothing')
    .action((flags: TargetFlags & ResultFlags & { dryRun?: boolean }) =>
      runResultCommand('poke-images', flags, async ({ engine, progress, signal }) => {
        const prepared = await prepareFromFlags(flags, engine, progress, { signal });
        const options = { dryRun: flags.dryRun ?? false, fieldManager: engine.config.fieldManager, progress, signal };
        return { prepared, result: await pokeImages(prepared.rendered, requireCluster(prepared), options) };
      }),
    );
  return command;
}
