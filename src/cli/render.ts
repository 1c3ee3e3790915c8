import { Command, Option } from 'commander';
import { toYamlDocuments } from '../yaml.ts';
import { problemsOf } from '../problems.ts';
import { targetObjects } from '../target/rendered-target.ts';
import { addTargetFlags, prepareFromFlags, type TargetFlags } from './options.ts';
import { withCliEngine } from './run-action.ts';
import { interruptedExitCode, stopOnSignals } from './signals.ts';

interface RenderFlags extends TargetFlags {
  offlineKubernetes?: boolean;
  output: 'yaml' | 'json';
}

export function renderCommand(): Command {
  const command = new Command('render');
  addTargetFlags(command)
    .option('--offline-kubernetes', 'render without a cluster (built-in kind scopes, default Kubernetes version for Helm)')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['yaml', 'json']).default('yaml'))
    .action(async (flags: RenderFlags) => {
      const signal = stopOnSignals();
      try {
        const objects = await withCliEngine(
          async ({ engine, progress }) =>
            targetObjects(
              (await prepareFromFlags(flags, engine, progress, { offline: flags.offlineKubernetes ?? false, signal })).rendered,
            ),
          signal,
        );
        process.stdout.write(flags.output === 'json' ? `${JSON.stringify(objects, null, 2)}\n` : toYamlDocuments(objects));
        process.exitCode = interruptedExitCode(signal) ?? 0;
      } catch (error) {
        // Once interrupted, the interruption stands for what the render threw (e.g. a helm Ctrl-C killed too).
        for (const problem of problemsOf(signal.aborted ? signal.reason : error)) process.stderr.write(`error: ${problem}\n`);
        process.exitCode = interruptedExitCode(signal) ?? 1;
      }
    });
  return command;
}
