/**
 * The `gantry` command line: one subcommand per verb, as Kluctl's CLI has them.
 */
import { Command, CommanderError } from 'commander';
import { agentCommand } from './agent.ts';
import { clusterCommand } from './cluster.ts';
import { contextCommand } from './context.ts';
import { pipelineCommand } from './pipeline.ts';
import { roleBindingCommand, userCommand } from './user.ts';
import { auditCommand } from './audit.ts';
import { controllerCommand } from './controller.ts';
import { deleteCommand } from './delete.ts';
import { deployCommand } from './deploy.ts';
import { diffCommand } from './diff.ts';
import { gitopsCommand } from './gitops.ts';
import { globalServiceCommand } from './globalservice.ts';
import { helmPullCommand } from './helm-pull.ts';
import { helmUpdateCommand } from './helm-update.ts';
import { listImagesCommand } from './list-images.ts';
import { listTargetsCommand } from './list-targets.ts';
import { loginCommand } from './login.ts';
import { operatorCommand } from './operator.ts';
import { pokeImagesCommand } from './poke-images.ts';
import { pruneCommand } from './prune.ts';
import { renderCommand } from './render.ts';
import { replicaCommand } from './replica.ts';
import { repoCommand } from './repo.ts';
import { serverCommand } from './server.ts';
import { serviceCommand } from './service.ts';
import { downCommand, upCommand } from './up.ts';
import { validateCommand } from './validate.ts';

/** Runs the CLI on `argv` (process.argv form) and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const program = new Command('gantry')
    .description('GitOps continuous delivery for Kubernetes: deploys Kluctl projects with server-side apply')
    .showHelpAfterError()
    .exitOverride();
  for (const command of [
    deployCommand(),
    diffCommand(),
    pruneCommand(),
    deleteCommand(),
    validateCommand(),
    renderCommand(),
    listTargetsCommand(),
    listImagesCommand(),
    pokeImagesCommand(),
    helmPullCommand(),
    helmUpdateCommand(),
    gitopsCommand(),
    controllerCommand(),
    serverCommand(),
    loginCommand(),
    clusterCommand(),
    repoCommand(),
    replicaCommand(),
    serviceCommand(),
    globalServiceCommand(),
    contextCommand(),
    pipelineCommand(),
    userCommand(),
    roleBindingCommand(),
    auditCommand(),
    agentCommand(),
    operatorCommand(),
    upCommand(),
    downCommand(),
  ]) {
    program.addCommand(command);
  }
  try {
    await program.parseAsync(argv);
  } catch (error) {
    // Commander printed its own usage errors; anything else (e.g. a server that cannot start) is said here.
    if (error instanceof CommanderError) return error.exitCode;
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  return typeof process.exitCode === 'number' ? process.exitCode : 0;
}
