/**
 * `gantry controller …`: the in-cluster GitOps controller for KluctlDeployments, as Kluctl's `kluctl controller`
 * groups its subcommands.
 */
import { Command } from 'commander';
import { controllerInstallCommand } from './controller-install.ts';
import { controllerRunCommand } from './controller-run.ts';

export function controllerCommand(): Command {
  return new Command('controller')
    .description('the GitOps controller for KluctlDeployment resources')
    .addCommand(controllerInstallCommand())
    .addCommand(controllerRunCommand());
}
