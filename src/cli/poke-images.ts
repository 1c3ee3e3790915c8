import { Command } from 'commander';
import { pokeImages } from '../deploy/poke-images.ts';
import { prepareTarget } from '../deploy/prepare.ts';
import { addResultFlags, addTargetFlags, toTargetOptions, type ResultFlags, type TargetFlags } from './options.ts';
import { runResultCommand } from './run-action.ts';

export function pokeImagesCommand(): Command {
  const command = new Command('poke-images').description('set only the images images.get_image resolves, in the objects already deployed');
  addResultFlags(addTargetFlags(command))
    .option('--dry-run', 'show the changes, persist nothing')
    .action((flags: TargetFlags & ResultFlags & { dryRun?: boolean }) =>
      runResultCommand('poke-images', flags, async (progress) => {
        const prepared = await prepareTarget(toTargetOptions(flags), progress);
        return { prepared, result: await pokeImages(prepared, { dryRun: flags.dryRun ?? false }, progress) };
      }),
    );
  return command;
}
