/**
 * `gantry gitops deploy|diff|prune|validate|reconcile|suspend|resume|logs`: drives KluctlDeployments in the cluster
 * the way kluctl's gitops commands do (docs/kluctl/commands/gitops-*.md). A request command sets the request
 * annotation (with the override flags as a patch of the spec), waits for the controller's answer, showing the
 * controller's log lines of that reconcile when the controller runs in the cluster, and prints the stored result
 * exactly as the local commands print theirs; deployments selected by a label selector run one after another, in
 * name order, and the first failure stops the rest (as kluctl). Progress goes to stderr; the exit code is 1 when a
 * result holds errors or the controller reports a command error. `logs` is in gitops-logs.ts.
 */
import { Command } from 'commander';
import type { KluctlDeployment, RequestKind } from '../api/kluctl-deployment.ts';
import { DEFAULT_RESULTS_NAMESPACE, readCommandResult } from '../deploy/result-store.ts';
import type { CommandResult } from '../deploy/result.ts';
import { parseDuration } from '../duration.ts';
import { buildOverridesPatch, type SpecOverrides } from '../gitops/overrides.ts';
import { deploymentKey, requestAndWait, selectDeployments, setSuspended, type Selection } from '../gitops/requests.ts';
import { Cluster } from '../kube/cluster.ts';
import { stderrProgress, type Progress } from '../progress.ts';
import { addLogFlags, logsCommand, RequestLog, type LogFlags } from './gitops-logs.ts';
import { errorResult, parseOutputs, printResult, type OutputTarget } from './output.ts';
import { messageOf } from '../problems.ts';

interface SelectionFlags {
  namespace?: string;
  name?: string;
  labelSelector?: string;
  kubeconfig?: string;
  context?: string;
  timeout: string;
}

interface RequestFlags extends SelectionFlags, LogFlags {
  output: string[];
  shortOutput?: boolean;
  commandResultNamespace: string;
  warningsAsErrors?: boolean;
  target?: string;
  targetNameOverride?: string;
  targetContext?: string;
  arg: string[];
  argsFromFile: string[];
  fixedImage: string[];
  fixedImagesFile: string[];
  includeTag: string[];
  excludeTag: string[];
  includeDeploymentDir: string[];
  excludeDeploymentDir: string[];
  dryRun?: boolean;
  forceApply?: boolean;
  replaceOnError?: boolean;
  forceReplaceOnError?: boolean;
  abortOnError?: boolean;
  wait?: boolean;
  prune?: boolean;
}

const REQUEST_DESCRIPTIONS: Record<RequestKind, string> = {
  deploy: 'make a KluctlDeployment deploy now (annotation kluctl.io/request-deploy) and show the result',
  diff: 'make a KluctlDeployment diff now (annotation kluctl.io/request-diff) and show the result',
  prune: 'make a KluctlDeployment prune now (annotation kluctl.io/request-prune) and show the result',
  validate: 'make a KluctlDeployment validate now (annotation kluctl.io/request-validate) and show the result',
  reconcile: 'make a KluctlDeployment reconcile now (annotation kluctl.io/request-reconcile) and show the result',
};

export function gitopsCommand(): Command {
  const gitops = new Command('gitops');
  for (const kind of ['deploy', 'diff', 'prune', 'validate', 'reconcile'] as const) gitops.addCommand(requestCommand(kind));
  gitops.addCommand(suspendCommand(true));
  gitops.addCommand(suspendCommand(false));
  gitops.addCommand(logsCommand());
  return gitops;
}

function requestCommand(kind: RequestKind): Command {
  const command = addLogFlags(addOverrideFlags(addSelectionFlags(new Command(kind).description(REQUEST_DESCRIPTIONS[kind]))))
    .option('-o, --output <format[=path]>', 'text, json or yaml, to stdout or (format=path) to a file; repeatable', collect, [])
    .option('--short-output', 'text output without the diffs of changed objects')
    .option('--command-result-namespace <namespace>', 'namespace where the controller keeps command results', DEFAULT_RESULTS_NAMESPACE);
  if (kind === 'deploy' || kind === 'reconcile') {
    command.option('--no-wait', 'do not wait for readiness').option('--prune', 'delete orphan objects after deploying');
  }
  if (kind === 'validate') command.option('--warnings-as-errors', 'fail when the validation has warnings');
  return command.action((flags: RequestFlags) => runRequests(kind, flags, command));
}

function suspendCommand(suspend: boolean): Command {
  const name = suspend ? 'suspend' : 'resume';
  const command = addSelectionFlags(
    new Command(name).description(
      suspend
        ? 'stop reconciling a KluctlDeployment (spec.suspend: true)'
        : 'reconcile a suspended KluctlDeployment again (spec.suspend: false)',
    ),
  ).option('--all', `${name} every KluctlDeployment of the namespace`);
  return command.action(async (flags: SelectionFlags & { all?: boolean }) => {
    const progress = stderrProgress();
    try {
      const cluster = Cluster.connect({ kubeconfig: flags.kubeconfig, context: flags.context });
      for (const deployment of await selectDeployments(cluster, selectionOf(flags, flags.all))) {
        await setSuspended(cluster, deployment, suspend, { timeoutMs: parseDuration(flags.timeout), progress });
        progress.step(deploymentKey(deployment), suspend ? 'suspended' : 'resumed');
      }
    } catch (error) {
      process.stderr.write(`error: ${messageOf(error)}\n`);
      process.exitCode = 1;
    }
  });
}

function addSelectionFlags(command: Command): Command {
  return command
    .option('-n, --namespace <namespace>', "namespace of the KluctlDeployments (the kubeconfig context's namespace when omitted)")
    .option('--name <name>', 'name of the KluctlDeployment')
    .option('-l, --label-selector <selector>', 'all KluctlDeployments of the namespace matching this label selector, one after another')
    .option('--kubeconfig <file>', 'kubeconfig to use instead of $KUBECONFIG / ~/.kube/config')
    .option('--context <name>', 'kubeconfig context of the cluster the KluctlDeployments are in')
    .option('--timeout <duration>', 'how long to wait for the controller', '10m');
}

/** Kluctl's "GitOps overrides": changes to the spec for this request only. */
function addOverrideFlags(command: Command): Command {
  return command
    .option('-t, --target <name>', 'target to deploy (spec.target)')
    .option('-T, --target-name-override <name>', 'the target name templates and the discriminator see (spec.targetNameOverride)')
    .option('--target-context <name>', "kubeconfig context to deploy to, overriding the target's (spec.context)")
    .option(
      '-a, --arg <name=value>',
      'template argument merged over spec.args (repeatable; value parsed as YAML; name=@file reads a file)',
      collect,
      [],
    )
    .option('--args-from-file <file>', 'YAML file of template arguments (repeatable; -a overrides)', collect, [])
    .option(
      '-F, --fixed-image <image=result>',
      'fixed image added to spec.images: image<:namespace:deployment:container>=result (repeatable)',
      collect,
      [],
    )
    .option('--fixed-images-file <file>', "YAML file with a list 'images' of fixed images (repeatable)", collect, [])
    .option('-I, --include-tag <tag>', 'only items with this tag (repeatable)', collect, [])
    .option('-E, --exclude-tag <tag>', 'skip items with this tag (repeatable)', collect, [])
    .option('--include-deployment-dir <dir>', 'only the item in this folder (repeatable)', collect, [])
    .option('--exclude-deployment-dir <dir>', 'skip the item in this folder (repeatable)', collect, [])
    .option('--dry-run', 'server-side dry run: persist nothing')
    .option('--force-apply', 'take over every field other field managers own')
    .option('--replace-on-error', 'when applying an object fails, retry with a replace')
    .option('--force-replace-on-error', 'when replacing fails too, delete the object and create it again')
    .option('--abort-on-error', 'start no further item after the first error');
}

async function runRequests(kind: RequestKind, flags: RequestFlags, command: Command): Promise<void> {
  let outputs: OutputTarget[];
  try {
    outputs = parseOutputs(flags.output);
  } catch (error) {
    process.stderr.write(`error: ${messageOf(error)}\n`);
    process.exitCode = 1;
    return;
  }
  const progress = stderrProgress();
  let succeeded = false;
  try {
    const cluster = Cluster.connect({ kubeconfig: flags.kubeconfig, context: flags.context });
    const deployments = await selectDeployments(cluster, selectionOf(flags));
    for (const [index, deployment] of deployments.entries()) {
      succeeded = await runRequest(cluster, deployment, kind, flags, command, outputs, progress);
      if (!succeeded && index < deployments.length - 1) {
        progress.step(deploymentKey(deployment), `failed; skipping the remaining ${deployments.length - index - 1} KluctlDeployment(s)`);
        break;
      }
    }
  } catch (error) {
    succeeded = false;
    await printResult(errorResult(error), outputs, { shortOutput: flags.shortOutput ?? false });
  }
  process.exitCode = succeeded ? 0 : 1;
}

/** One request to one deployment: request, wait, print. @returns whether it succeeded. */
async function runRequest(
  cluster: Cluster,
  deployment: KluctlDeployment,
  kind: RequestKind,
  flags: RequestFlags,
  command: Command,
  outputs: readonly OutputTarget[],
  progress: Progress,
): Promise<boolean> {
  const key = deploymentKey(deployment);
  const patch = await buildOverridesPatch(deployment.spec, overridesOf(flags, command));
  const log = await RequestLog.open(cluster, flags, progress, key);
  const answer = await requestAndWait(cluster, deployment, kind, patch, {
    timeoutMs: parseDuration(flags.timeout),
    progress,
    onStarted: (started) => log.start(key, kind, started),
    conditionMessages: () => !log.showing,
  }).finally(() => log.finish());
  const stored = answer.resultId ? await readCommandResult(cluster, flags.commandResultNamespace, answer.resultId) : undefined;
  if (answer.resultId && !stored)
    progress.step(
      key,
      `the result ${answer.resultId} is not in namespace ${flags.commandResultNamespace} (see --command-result-namespace)`,
    );
  if (answer.commandError) progress.step(key, `the controller reports: ${answer.commandError}`);
  const result: CommandResult | undefined =
    stored?.result ?? (answer.commandError ? errorResult(new Error(answer.commandError)) : undefined);
  if (!result) {
    progress.step(key, `the ${kind} request finished without a stored result`);
    return true;
  }
  await printResult(result, outputs, { shortOutput: flags.shortOutput ?? false, dryRun: stored?.commandInfo.dryRun });
  const failed =
    Boolean(answer.commandError) || result.errors.length > 0 || (flags.warningsAsErrors === true && result.warnings.length > 0);
  return !failed;
}

function selectionOf(flags: SelectionFlags, all = false): Selection {
  return { namespace: flags.namespace, name: flags.name, labelSelector: flags.labelSelector, all };
}

/** Only flags given on the command line override the spec (as kluctl looks at whether a flag was changed). */
function overridesOf(flags: RequestFlags, command: Command): SpecOverrides {
  return {
    target: flags.target,
    targetNameOverride: flags.targetNameOverride,
    context: flags.targetContext,
    args: flags.arg,
    argsFiles: flags.argsFromFile,
    fixedImages: flags.fixedImage,
    fixedImagesFiles: flags.fixedImagesFile,
    includeTags: flags.includeTag,
    excludeTags: flags.excludeTag,
    includeDeploymentDirs: flags.includeDeploymentDir.map(trimSlashes),
    excludeDeploymentDirs: flags.excludeDeploymentDir.map(trimSlashes),
    dryRun: flags.dryRun,
    forceApply: flags.forceApply,
    replaceOnError: flags.replaceOnError,
    forceReplaceOnError: flags.forceReplaceOnError,
    abortOnError: flags.abortOnError,
    noWait: command.getOptionValueSource('wait') === 'cli' ? true : undefined,
    prune: flags.prune,
  };
}

function trimSlashes(dir: string): string {
  return dir.replace(/^\.\/|\/+$/g, '');
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
