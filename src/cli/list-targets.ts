import { Command } from 'commander';
import { loadKluctlProject } from '../project/kluctl-project.ts';
import { addOutputFlag, type OutputFormat } from './options.ts';
import { messageOf } from '../problems.ts';

export function listTargetsCommand(): Command {
  const command = new Command('list-targets');
  addOutputFlag(command)
    .option('--project-dir <dir>', 'folder of the Kluctl project', '.')
    .action(async (flags: { projectDir: string; output: OutputFormat }) => {
      try {
        const project = await loadKluctlProject(flags.projectDir);
        const targets = (project.config.targets ?? []).map((target) => ({
          name: target.name,
          context: target.context ?? null,
          args: target.args ?? {},
        }));
        process.stdout.write(
          flags.output === 'json'
            ? `${JSON.stringify(targets, null, 2)}\n`
            : targets.map((target) => `${target.name}${target.context ? `\tcontext: ${target.context}` : ''}\n`).join(''),
        );
      } catch (error) {
        process.stderr.write(`error: ${messageOf(error)}\n`);
        process.exitCode = 1;
      }
    });
  return command;
}
