/**
 * Flags shared by the target commands, named as Kluctl names them (common-arguments docs), and their parsing.
 */
import { hostname, userInfo } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { KubeConfig } from '@kubernetes/client-node';
import { prepareTarget, type PreparedTarget, type PrepareOptions } from '../target/prepare.ts';
import type { TargetRequest } from '../target/request.ts';
import { renderAndRun, type PendingRender } from '../target/render-and-run.ts';
import type { Engine } from '../engine.ts';
import type { Cluster } from '../kube/cluster.ts';
import { loadKubeConfig } from '../kube/client.ts';
import { parseArgs } from '../project/args.ts';
import { readFixedImages } from '../project/fixed-images.ts';
import type { Progress } from '../progress.ts';
import type { ApplyBehaviour } from '../deploy/apply.ts';
import { AppliedObjects, appliedObjectsFile } from '../deploy/applied-objects.ts';
import { DEFAULT_RESULTS_NAMESPACE } from '../deploy/result-store.ts';
import { RenderCache, RenderRecordFiles } from '../target/render-cache.ts';
import { GANTRY_VERSION } from '../version.ts';
import { BUILD_STAMP } from '../build-stamp.ts';
import type { TargetLock } from '../deploy/target-lock.ts';
import { parseDuration } from '../duration.ts';
import type { Address } from '../ports.ts';
import { addRegistryFlags, cliRegistryCredentials, type RegistryFlags } from './oci-registry-flags.ts';
import type { CliRun } from './cli-run.ts';

export interface TargetFlags extends RegistryFlags {
  target?: string;
  targetNameOverride?: string;
  arg: string[];
  argsFromFile: string[];
  projectDir: string;
  kubeconfig?: string;
  context?: string;
  discriminator?: string;
  includeTag: string[];
  excludeTag: string[];
  includeDeploymentDir: string[];
  excludeDeploymentDir: string[];
  fixedImage: string[];
  fixedImagesFile: string[];
  /** false with --no-render-cache. */
  renderCache: boolean;
}

/** Output flags of the commands that produce a command result (Kluctl's --output and results flags). */
export interface ResultFlags {
  output: string[];
  shortOutput?: boolean;
  writeCommandResult?: boolean;
  /** Keep the result of a dry run too (Kluctl's --force-write-command-result). */
  forceWriteCommandResult?: boolean;
  commandResultNamespace: string;
  keepCommandResultsCount: number;
}

export type OutputFormat = 'text' | 'json';

export function addTargetFlags(command: Command): Command {
  command
    .option('-t, --target <name>', 'target to run against')
    .option('-T, --target-name-override <name>', "the target's name as templates and the discriminator see it")
    .option('-a, --arg <name=value>', 'template argument (repeatable; the value is parsed as YAML; name=@file reads a file)', collect, [])
    .option('--args-from-file <file>', 'YAML file of template arguments (repeatable; -a overrides)', collect, [])
    .option('--project-dir <dir>', 'folder of the Kluctl project', '.')
    .option('--kubeconfig <file>', 'kubeconfig to use instead of $KUBECONFIG / ~/.kube/config')
    .option('--context <name>', "kubeconfig context, overriding the target's")
    .option('--discriminator <value>', "overrides the target's discriminator")
    .option('-I, --include-tag <tag>', 'only items with this tag (repeatable)', collect, [])
    .option('-E, --exclude-tag <tag>', 'skip items with this tag (repeatable)', collect, [])
    .option('--include-deployment-dir <dir>', 'only the item in this folder (repeatable)', collect, [])
    .option('--exclude-deployment-dir <dir>', 'skip the item in this folder (repeatable)', collect, [])
    .option(
      '-F, --fixed-image <image=result>',
      'fixed image for images.get_image: image<:namespace:deployment:container>=result (repeatable)',
      collect,
      [],
    )
    .option('--fixed-images-file <file>', "YAML file with a list 'images' of fixed images (repeatable)", collect, [])
    .option('--no-render-cache', 'render the target even when an earlier render of unchanged inputs could be reused');
  return addRegistryFlags(command);
}

export interface ApplyFlags {
  forceApply?: boolean;
  replaceOnError?: boolean;
  forceReplaceOnError?: boolean;
  abortOnError?: boolean;
  readinessTimeout: string;
}

/** The flags that change how objects are applied (deploy and diff), named as Kluctl names them. */
export function addApplyFlags(command: Command): Command {
  return command
    .option('--force-apply', 'take over every field other field managers own instead of giving them up')
    .option('--replace-on-error', 'when applying an object fails, retry with a replace')
    .option('--force-replace-on-error', 'when replacing fails too, delete the object and create it again')
    .option('--abort-on-error', 'start no further item after the first error')
    .option('--readiness-timeout <duration>', 'how long to wait for one set of objects to become ready', '5m');
}

export function toApplyBehaviour(flags: ApplyFlags): ApplyBehaviour {
  return {
    forceApply: flags.forceApply ?? false,
    replaceOnError: flags.replaceOnError ?? false,
    forceReplaceOnError: flags.forceReplaceOnError ?? false,
    abortOnError: flags.abortOnError ?? false,
    readinessTimeoutMs: parseDuration(flags.readinessTimeout),
  };
}

export function addResultFlags(command: Command): Command {
  return command
    .option('-o, --output <format[=path]>', 'text, json or yaml, to stdout or (format=path) to a file; repeatable', collect, [])
    .option('--short-output', 'text output without the diffs of changed objects')
    .option('--write-command-result', 'keep the result in the cluster (a compressed Secret in the results namespace)')
    .option('--force-write-command-result', "keep a dry run's result too (a dry run's is not kept by default)")
    .option('--command-result-namespace <namespace>', 'namespace of kept results', DEFAULT_RESULTS_NAMESPACE)
    .option(
      '--keep-command-results-count <count>',
      'how many results of one project and target to keep (at least 1)',
      positiveIntegerArg,
      5,
    );
}

/** `-o text|json` for commands whose output is a listing, not a command result. */
export function addOutputFlag(command: Command): Command {
  return command.addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'));
}

/** A target as the command line names it: the data-only request, and the kubeconfig (none when offline). */
export interface CliTarget {
  request: TargetRequest;
  kubeConfig: KubeConfig | undefined;
}

/**
 * The target flags as a TargetRequest: `-a` and `--args-from-file` parsed, `-F` and `--fixed-images-file` read,
 * and (unless offline) the kubeconfig loaded, whose context `--context` or the target names.
 * @throws Error naming the malformed argument, the unreadable file, or a missing kubeconfig.
 */
export async function cliTarget(flags: TargetFlags, offline = false): Promise<CliTarget> {
  const request: TargetRequest = {
    projectDir: flags.projectDir,
    target: flags.target,
    targetNameOverride: flags.targetNameOverride,
    args: await parseArgs(flags.arg, flags.argsFromFile),
    context: flags.context,
    discriminator: flags.discriminator,
    fixedImages: await readFixedImages(flags.fixedImagesFile, flags.fixedImage),
    inclusion: {
      includeTags: flags.includeTag,
      excludeTags: flags.excludeTag,
      includeDirs: flags.includeDeploymentDir.map(trimSlashes),
      excludeDirs: flags.excludeDeploymentDir.map(trimSlashes),
    },
  };
  return { request, kubeConfig: offline ? undefined : loadKubeConfig({ kubeconfig: flags.kubeconfig }) };
}

/**
 * Renders the target the flags name (see cliTarget and prepareTarget), with the CLI's registry credentials for OCI
 * includes; `offline` renders without a cluster, `onTarget` and `signal` as prepareTarget's.
 */
export async function prepareFromFlags(
  flags: TargetFlags,
  engine: Engine,
  progress: Progress,
  {
    offline = false,
    onTarget,
    signal,
  }: { offline?: boolean; onTarget?: PrepareOptions['onTarget']; signal?: AbortSignal | undefined } = {},
): Promise<PreparedTarget> {
  const { request, kubeConfig } = await cliTarget(flags, offline);
  const renderCache = flags.renderCache && !offline ? cliRenderCache(engine) : undefined;
  try {
    const registries = await cliRegistryCredentials(flags);
    return await prepareTarget(request, engine, { kubeConfig, progress, registries, renderCache, onTarget, signal });
  } finally {
    // A command renders once: Python may exit while it goes on.
    engine.renderer.release();
  }
}

/**
 * Where the CLI keeps renders for reuse (target/render-cache.ts), for the build that runs. None when the sources
 * run, so that an edit shows at once.
 */
function cliRenderCache(engine: Engine): RenderCache | undefined {
  return BUILD_STAMP === undefined
    ? undefined
    : new RenderCache(`${GANTRY_VERSION} ${BUILD_STAMP}`, new RenderRecordFiles(path.join(engine.config.cacheDir, 'renders')));
}

/**
 * Renders the target the flags name (see prepareFromFlags) and runs `command` on it from the moment its
 * discriminator and cluster are known (see renderAndRun); the run's signal stops both.
 * @throws the render's error first (nothing was applied then), else the command's.
 */
export function renderAndRunFromFlags<R>(
  flags: TargetFlags,
  { engine, progress, signal }: CliRun,
  command: (pending: PendingRender, cluster: Cluster, signal: AbortSignal) => Promise<R>,
): Promise<{ prepared: PreparedTarget; result: R }> {
  return renderAndRun((onTarget) => prepareFromFlags(flags, engine, progress, { onTarget, signal }), signal, command);
}

/** What this user's earlier commands applied to the target of `discriminator` on `cluster` (see applied-objects.ts). */
export function loadAppliedObjects(cluster: Cluster, discriminator: string, engine: Engine): Promise<AppliedObjects> {
  return AppliedObjects.load(appliedObjectsFile(engine.config.cacheDir, cluster.client.server, discriminator));
}

/** commander argParser for a Go duration; the value is in milliseconds. */
export function durationArg(text: string): number {
  try {
    return parseDuration(text);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/** commander argParser for an integer of at least 1. */
export function positiveIntegerArg(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new InvalidArgumentError(`'${text}' is not a positive integer`);
  return value;
}

function trimSlashes(dir: string): string {
  return dir.replace(/^\.\/|\/+$/g, '');
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/**
 * Asks a yes/no question on the terminal; `--yes` answers for the user.
 * @throws Error when stdin is not a terminal and `--yes` was not given.
 */
export async function confirm(question: string, yes: boolean): Promise<boolean> {
  if (yes) return true;
  if (!process.stdin.isTTY) throw new Error(`${question} Refusing without a terminal to ask on: pass --yes`);
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await prompt.question(`${question} [y/N] `)).trim());
  } finally {
    prompt.close();
  }
}

/** `host:port` as controller-runtime takes it; an empty host (`:8080`) listens on every interface. */
export function parseAddress(text: string): Address {
  const match = /^(.*):(\d+)$/.exec(text);
  if (!match) throw new InvalidArgumentError(`'${text}' is not an address (expected host:port or :port)`);
  const host = match[1] === '' ? '0.0.0.0' : match[1]!.replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(match[2]) };
}

/**
 * The target lock of a CLI command that changes the cluster: named after the command, the user and the machine, so
 * whoever finds the target locked knows whom to ask; waits up to `waitMs` (the command's --timeout) for another.
 */
export function cliTargetLock(command: string, waitMs: number): TargetLock {
  return { holder: `gantry ${command} (${userInfo().username}@${hostname()}, pid ${process.pid})`, waitMs };
}
