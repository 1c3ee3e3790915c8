import { Command, Option } from 'commander';
import { problemsOf } from '../problems.ts';
import { toYaml } from '../yaml.ts';
import { addTargetFlags, prepareFromFlags, type TargetFlags } from './options.ts';
import { withCliEngine } from './run-action.ts';

interface ListImagesFlags extends TargetFlags {
  simple?: boolean;
  offlineKubernetes?: boolean;
  output: 'yaml' | 'json';
}

/** Prints the images images.get_image resolved, as a fixed-images file (`images:` list), like Kluctl's list-images. */
export function listImagesCommand(): Command {
  const command = new Command('list-images');
  addTargetFlags(command)
    .option('--simple', 'only image and resultImage per entry')
    .option('--offline-kubernetes', 'render without a cluster')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['yaml', 'json']).default('yaml'))
    .action(async (flags: ListImagesFlags) => {
      try {
        const seen = await withCliEngine(
          async ({ engine, progress }) =>
            (await prepareFromFlags(flags, engine, progress, { offline: flags.offlineKubernetes ?? false })).rendered.images,
        );
        const images = seen.map(({ fieldPath: _fieldPath, ...image }) =>
          flags.simple ? { image: image.image, resultImage: image.resultImage } : image,
        );
        process.stdout.write(flags.output === 'json' ? `${JSON.stringify({ images }, null, 2)}\n` : toYaml({ images }));
        process.exitCode = 0;
      } catch (error) {
        for (const problem of problemsOf(error)) process.stderr.write(`error: ${problem}\n`);
        process.exitCode = 1;
      }
    });
  return command;
}
