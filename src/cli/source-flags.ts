/**
 * The flags that name a fleet service's source and renderer, shared by `gantry service create|update` and
 * `gantry globalservice create` (whose template is a service's source).
 */
import { type Command, Option } from 'commander';
import { keyValueArg } from './fleet-output.ts';

export interface SourceFlags {
  namespace?: string;
  repo?: string;
  ref?: string;
  folder?: string;
  renderer?: 'auto' | 'kluctl' | 'kustomize' | 'raw';
  target?: string;
  arg: Record<string, string>;
  config: Record<string, string>;
  context: string[];
}

export function addSourceFlags(command: Command): Command {
  return command
    .option('--namespace <name>', 'namespace of the service (default for objects without one)')
    .option('--repo <url-or-id>', 'the git repository (see gantry repo add)')
    .option('--ref <ref>', 'branch, tag or commit')
    .option('--folder <path>', 'folder of the repository holding the service')
    .addOption(
      new Option('--renderer <kind>', 'how to render the folder (auto: by its files)').choices(['auto', 'kluctl', 'kustomize', 'raw']),
    )
    .option('--target <name>', 'kluctl: the target')
    .option('--arg <name=value>', 'kluctl: an arg (repeatable)', keyValueArg, {})
    .option('--config <key=value>', 'a configuration value (repeatable; replaces the whole configuration on update)', keyValueArg, {})
    .option(
      '--context <name>',
      'a service context to bind, read in Liquid templates as contexts.<name> (repeatable; replaces the bound ones on update)',
      (value: string, previous: string[]) => [...previous, value],
      [],
    );
}

/** The renderer the flags ask for: kluctl when a target or args are given, else auto unless named. */
export function rendererFromFlags(flags: SourceFlags) {
  const kind = flags.renderer ?? (flags.target || Object.keys(flags.arg).length > 0 ? 'kluctl' : 'auto');
  return kind === 'kluctl' ? { kind, target: flags.target, args: flags.arg } : { kind };
}

/** The source a create needs. @throws Error naming the missing flags. */
export function requiredSource(flags: SourceFlags): {
  namespace: string;
  repository: string;
  git: { ref: string; folder: string };
  contexts?: string[];
} {
  if (!flags.namespace || !flags.repo || !flags.ref) throw new Error('create needs --namespace, --repo and --ref');
  return {
    namespace: flags.namespace,
    repository: flags.repo,
    git: { ref: flags.ref, folder: flags.folder ?? '' },
    ...(flags.context.length > 0 ? { contexts: flags.context } : {}),
  };
}
