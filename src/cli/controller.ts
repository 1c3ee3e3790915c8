/**
 * `gantry controller …`: the in-cluster GitOps controller for KluctlDeployments, as Kluctl's `kluctl controller`
 * groups its subcommands.
 */
import { Command } from 'commander';
import { controllerInstallCommand } from './controller-install.ts';
import { controllerRunCommand } from './controller-run.ts';

export function controllerCommand(): Command {
  return new Command('controller').addCommand(controllerInstallCommand()).addCommand(controllerRunCommand());
}
