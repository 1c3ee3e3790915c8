import { Command, Option } from 'commander';
import { prepareTarget } from '../deploy/prepare.ts';
import { stderrProgress } from '../progress.ts';
import { toYamlDocuments } from '../yaml.ts';
import { problemsOf } from '../problems.ts';
import { addTargetFlags, toTargetOptions, type TargetFlags } from './options.ts';

interface RenderFlags extends TargetFlags {
  offlineKubernetes?: boolean;
  output: 'yaml' | 'json';
}

export function renderCommand(): Command {
  const command = new Command('render').description('render the target and print its objects (multi-document YAML) on stdout');
  addTargetFlags(command)
    .option('--offline-kubernetes', 'render without a cluster (built-in kind scopes, default Kubernetes version for Helm)')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['yaml', 'json']).default('yaml'))
    .action(async (flags: RenderFlags) => {
      try {
        const prepared = await prepareTarget(toTargetOptions(flags, flags.offlineKubernetes ?? false), stderrProgress());
        process.stdout.write(
          flags.output === 'json' ? `${JSON.stringify(prepared.objects, null, 2)}\n` : toYamlDocuments(prepared.objects),
        );
        process.exitCode = 0;
      } catch (error) {
        for (const problem of problemsOf(error)) process.stderr.write(`error: ${problem}\n`);
        process.exitCode = 1;
      }
    });
  return command;
}
