/**
 * The `gantry` command line: one subcommand per verb, as Kluctl's CLI has them. Each verb's module is imported only
 * when that verb runs (the catalogue below holds what `gantry --help` lists), so a command loads just what it
 * uses: `gantry --help` and `gantry --version` load no engine, no Kubernetes client and no server.
 */
import { Command, CommanderError } from 'commander';
import { GANTRY_VERSION } from '../version.ts';
import { messageOf } from '../problems.ts';

interface CatalogueEntry {
  name: string;
  /** What `gantry --help` says of it, and the loaded command's own description. */
  description: string;
  load: () => Promise<Command>;
}

const CATALOGUE: CatalogueEntry[] = [
  {
    name: 'deploy',
    description: 'render the target and apply it with server-side apply, waiting for readiness',
    load: async () => (await import('./deploy.ts')).deployCommand(),
  },
  {
    name: 'diff',
    description: 'show what deploy would change (a server-side dry-run apply), one unified diff per changed object',
    load: async () => (await import('./diff.ts')).diffCommand(),
  },
  {
    name: 'prune',
    description: "delete the target's objects that the render no longer produces",
    load: async () => (await import('./prune.ts')).pruneCommand(),
  },
  {
    name: 'delete',
    description: 'delete every object of the target (found by its discriminator), Namespaces last',
    load: async () => (await import('./delete.ts')).deleteCommand(),
  },
  {
    name: 'validate',
    description: 'check that every object of the target exists and is ready',
    load: async () => (await import('./validate.ts')).validateCommand(),
  },
  {
    name: 'render',
    description: 'render the target and print its objects (multi-document YAML) on stdout',
    load: async () => (await import('./render.ts')).renderCommand(),
  },
  {
    name: 'list-targets',
    description: "list the project's targets",
    load: async () => (await import('./list-targets.ts')).listTargetsCommand(),
  },
  {
    name: 'list-images',
    description: 'render the target and list the images images.get_image resolved',
    load: async () => (await import('./list-images.ts')).listImagesCommand(),
  },
  {
    name: 'poke-images',
    description: 'set only the images images.get_image resolves, in the objects already deployed',
    load: async () => (await import('./poke-images.ts')).pokeImagesCommand(),
  },
  {
    name: 'helm-pull',
    description: "recursively searches for 'helm-chart.yaml' files and pre-pulls their charts into .helm-charts",
    load: async () => (await import('./helm-pull.ts')).helmPullCommand(),
  },
  {
    name: 'helm-update',
    description: "recursively searches for 'helm-chart.yaml' files and checks for new available versions",
    load: async () => (await import('./helm-update.ts')).helmUpdateCommand(),
  },
  {
    name: 'oci',
    description: 'push a Kluctl project to an OCI registry as an artifact (oci push)',
    load: async () => (await import('./oci.ts')).ociCommand(),
  },
  {
    name: 'gitops',
    description: 'drive KluctlDeployments through the GitOps controller: request deploy, diff, prune, validate, reconcile; suspend, resume',
    load: async () => (await import('./gitops.ts')).gitopsCommand(),
  },
  {
    name: 'controller',
    description: 'the GitOps controller for KluctlDeployment resources',
    load: async () => (await import('./controller.ts')).controllerCommand(),
  },
  {
    name: 'webui',
    description: "serve the web UI's KluctlDeployments and live objects for one kubeconfig context, without a server (no login)",
    load: async () => (await import('./webui.ts')).webuiCommand(),
  },
  {
    name: 'server',
    description: 'run the fleet control plane: the API that clusters, services and agents are managed through',
    load: async () => (await import('./server.ts')).serverCommand(),
  },
  {
    name: 'login',
    description: 'log in to a Gantry server with an API token or a user and password, and save it for the other commands',
    load: async () => (await import('./login.ts')).loginCommand(),
  },
  {
    name: 'cluster',
    description: "manage the fleet's clusters on the Gantry server (see gantry login)",
    load: async () => (await import('./cluster.ts')).clusterCommand(),
  },
  {
    name: 'repo',
    description: 'manage the git repositories services are sourced from (see gantry login)',
    load: async () => (await import('./repo.ts')).repoCommand(),
  },
  {
    name: 'replica',
    description: 'look at the Gantry server replicas (see gantry login)',
    load: async () => (await import('./replica.ts')).replicaCommand(),
  },
  {
    name: 'service',
    description: 'manage the services clusters run, on the Gantry server (see gantry login)',
    load: async () => (await import('./service.ts')).serviceCommand(),
  },
  {
    name: 'rejection',
    description: 'list and lift rejected revisions (see gantry service reject)',
    load: async () => (await import('./rejection.ts')).rejectionCommand(),
  },
  {
    name: 'globalservice',
    description: 'manage services kept on every cluster a tag selector picks (see gantry login)',
    load: async () => (await import('./globalservice.ts')).globalServiceCommand(),
  },
  {
    name: 'context',
    description: 'manage service contexts, configuration shared by services (see gantry login)',
    load: async () => (await import('./context.ts')).contextCommand(),
  },
  {
    name: 'pipeline',
    description: 'manage release pipelines: stages, edges, gates and promotions (see gantry login)',
    load: async () => (await import('./pipeline.ts')).pipelineCommand(),
  },
  {
    name: 'user',
    description: 'manage the users who log in to the Gantry server (admins)',
    load: async () => (await import('./user.ts')).userCommand(),
  },
  {
    name: 'rolebinding',
    description: 'grant roles to users and groups, within a scope (admins)',
    load: async () => (await import('./user.ts')).roleBindingCommand(),
  },
  {
    name: 'audit',
    description: "the server's audit log of changes, newest first (admins)",
    load: async () => (await import('./audit.ts')).auditCommand(),
  },
  {
    name: 'agent',
    description: "the fleet's pull agent: deploys its cluster's services from a Gantry server",
    load: async () => (await import('./agent.ts')).agentCommand(),
  },
  {
    name: 'operator',
    description:
      "the fleet's GitOps front end: GitRepository, Cluster, ServiceDeployment, GlobalService, ServiceContext and notification resources reconciled into the server",
    load: async () => (await import('./operator.ts')).operatorCommand(),
  },
  {
    name: 'up',
    description: 'write a fleet repository (bootstrap/, clusters/, services/), push it and bootstrap it onto the management cluster',
    load: async () => (await import('./up.ts')).upCommand(),
  },
  {
    name: 'down',
    description: 'stop the server, operator and agent `gantry up --runtime local` started',
    load: async () => (await import('./up.ts')).downCommand(),
  },
  {
    name: 'version',
    description: 'print the versions of Gantry and of the programs it runs (Python with Jinja2, helm, kustomize, sops)',
    load: async () => (await import('./version.ts')).versionCommand(),
  },
];

/** Runs the CLI on `argv` (process.argv form) and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const program = new Command('gantry')
    .description('GitOps continuous delivery for Kubernetes: deploys Kluctl projects with server-side apply')
    .version(GANTRY_VERSION, '-V, --version', "print Gantry's version (`gantry version` adds its programs')")
    .showHelpAfterError()
    .exitOverride();
  const words = argv.slice(2).filter((arg) => !arg.startsWith('-'));
  const invoked = words[0] === 'help' ? words[1] : words[0];
  for (const entry of CATALOGUE) {
    // Only the verb that runs is loaded; the others stay names and descriptions for the help.
    const command = entry.name === invoked ? await entry.load() : new Command(entry.name);
    program.addCommand(command.description(entry.description));
  }
  try {
    await program.parseAsync(argv);
  } catch (error) {
    // Commander printed its own usage errors; anything else (e.g. a server that cannot start) is said here.
    if (error instanceof CommanderError) return error.exitCode;
    process.stderr.write(`error: ${messageOf(error)}\n`);
    return 1;
  }
  return typeof process.exitCode === 'number' ? process.exitCode : 0;
}
