import { Command, Option } from 'commander';
import { prepareTarget } from '../deploy/prepare.ts';
import { problemsOf } from '../problems.ts';
import { stderrProgress } from '../progress.ts';
import { toYaml } from '../yaml.ts';
import { addTargetFlags, toTargetOptions, type TargetFlags } from './options.ts';

interface ListImagesFlags extends TargetFlags {
  simple?: boolean;
  offlineKubernetes?: boolean;
  output: 'yaml' | 'json';
}

/** Prints the images images.get_image resolved, as a fixed-images file (`images:` list), like Kluctl's list-images. */
export function listImagesCommand(): Command {
  const command = new Command('list-images').description('render the target and list the images images.get_image resolved');
  addTargetFlags(command)
    .option('--simple', 'only image and resultImage per entry')
    .option('--offline-kubernetes', 'render without a cluster')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['yaml', 'json']).default('yaml'))
    .action(async (flags: ListImagesFlags) => {
      try {
        const prepared = await prepareTarget(toTargetOptions(flags, flags.offlineKubernetes ?? false), stderrProgress());
        const images = prepared.images.map(({ fieldPath: _fieldPath, ...image }) =>
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
