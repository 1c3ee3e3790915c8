/**
 * `gantry up` as a function, Plural's `plural up` for Gantry: writes the fleet repository (repository.ts) into a git
 * repository without overwriting edits (scaffold.ts), commits and pushes what it wrote, deploys `bootstrap/` onto
 * the management cluster with Gantry's own engine (render, server-side apply, wait, prune by the bootstrap's
 * discriminator), and with `runtime: local` runs the server, operator and agent as local processes
 * (local-runtime.ts). Afterwards the fleet follows the repository: a pushed file under `services/` is deployed by the
 * root app `services`, through the operator, the server and the cluster's agent.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { deployTarget } from '../deploy/deploy.ts';
import { prepareTarget } from '../target/prepare.ts';
import type { CommandResult } from '../deploy/result.ts';
import type { Engine } from '../engine.ts';
import { run } from '../exec.ts';
import { Cluster } from '../kube/cluster.ts';
import { KubeClient } from '../kube/client.ts';
import { ADMIN_TOKEN_SECRET } from '../install/operator.ts';
import { readSecret } from '../kube/secrets.ts';
import { NO_SELECTION } from '../project/inclusion.ts';
import type { Progress } from '../progress.ts';
import { sleep } from '../sleep.ts';
import { agentUp, operatorUp, serverUp } from './local-runtime.ts';
import { ensureAdminTokenSecret } from '../install/server.ts';
import { BOOTSTRAP_DISCRIMINATOR, repositoryFiles, UP_NAMESPACE } from './repository.ts';
import { RECORD_FILE, scaffold, type ScaffoldResult } from './scaffold.ts';

export type Runtime = 'local' | 'cluster';

export interface UpOptions {
  /** The fleet repository's working tree; made (git init) when it is not one. */
  dir: string;
  /** The remote the server fetches from; default the repository's `origin` (added from this when missing). */
  gitUrl: string | undefined;
  kubeConfig: KubeConfig;
  kubeconfigFile: string | undefined;
  /** The management cluster's kubeconfig context. */
  context: string;
  runtime: Runtime;
  /** Gantry's image (runtime cluster). */
  image: string;
  /** Handle of the management cluster on the server. */
  managementCluster: string;
  /** Where the local runtime keeps its processes, logs, database and tokens. */
  stateDir: string;
  /** Limit for readiness waits, in ms. */
  timeoutMs: number;
  engine: Engine;
  progress: Progress;
}

export interface UpResult {
  repository: { dir: string; url: string; branch: string; files: ScaffoldResult; commit: string | undefined };
  bootstrap: CommandResult;
  /** The server and its admin token (local runtime). */
  server?: { url: string; adminToken: string };
}

/**
 * Runs every step; idempotent.
 * @throws Error for a repository without a remote, a failed push, a bootstrap that failed to render or apply (the
 *   result's errors), or a management cluster whose deploy token did not appear within the timeout.
 */
export async function up(options: UpOptions): Promise<UpResult> {
  const { progress } = options;
  const { url, branch } = await ensureRepository(options.dir, options.gitUrl);
  const server = options.runtime === 'local' ? await serverUp(options.stateDir) : undefined;
  if (server) progress.step('up', `server ${server.server}`);

  const files = await scaffold(
    options.dir,
    repositoryFiles({ url, branch, managementCluster: options.managementCluster, image: options.image }),
  );
  for (const kept of files.kept) progress.step('up', `kept ${kept}: edited since gantry up wrote it (delete it to get the new version)`);
  const commit = await commitAndPush(options.dir, branch, [...files.created, ...files.upgraded, RECORD_FILE]);
  if (commit) progress.step('up', `pushed ${commit.slice(0, 12)} to ${url}`);

  if (options.runtime === 'cluster') await ensureAdminTokenSecretIn(options);
  const bootstrap = await deployBootstrap(options);
  if (bootstrap.errors.length > 0) throw new Error(`bootstrap/: ${bootstrap.errors.map((e) => e.message).join('; ')}`);
  if (server) {
    const cluster = { context: options.context, ...(options.kubeconfigFile ? { kubeconfig: options.kubeconfigFile } : {}) };
    await operatorUp(options.stateDir, server.server, cluster);
    const tokenSecret = await deployTokenSecret(bootstrap.cluster, options);
    await agentUp(options.stateDir, server.server, tokenSecret, cluster);
  }
  return {
    repository: { dir: options.dir, url, branch, files, commit },
    bootstrap: bootstrap.result,
    ...(server ? { server: { url: server.server, adminToken: server.adminToken } } : {}),
  };
}

/** The repository's remote URL and branch, after `git init` of a folder that is no repository yet. */
async function ensureRepository(dir: string, gitUrl: string | undefined): Promise<{ url: string; branch: string }> {
  await mkdir(dir, { recursive: true });
  const isRepository = await git(dir, ['rev-parse', '--is-inside-work-tree']).then(
    () => true,
    () => false,
  );
  if (!isRepository) await git(dir, ['init', '--quiet', '--initial-branch=main']);
  const origin = await git(dir, ['remote', 'get-url', 'origin']).then(
    (out) => out.trim(),
    () => undefined,
  );
  if (origin && gitUrl && origin !== gitUrl) throw new Error(`${dir}: origin is ${origin}, not --git-url ${gitUrl}`);
  const url = origin ?? gitUrl;
  if (!url) throw new Error(`${dir}: the repository has no origin; give --git-url, the URL the server fetches it from`);
  if (!origin) await git(dir, ['remote', 'add', 'origin', url]);
  const branch = (await git(dir, ['symbolic-ref', '--short', 'HEAD'])).trim();
  return { url, branch };
}

/** Commits `paths` when they changed and pushes the branch; returns the new commit, if any. */
async function commitAndPush(dir: string, branch: string, paths: string[]): Promise<string | undefined> {
  await git(dir, ['add', '--', ...paths]);
  const changed = await git(dir, ['diff', '--cached', '--quiet']).then(
    () => false,
    () => true,
  );
  if (changed) await git(dir, [...(await identity(dir)), 'commit', '--quiet', '-m', 'gantry up: fleet repository']);
  await git(dir, ['push', '--quiet', 'origin', `HEAD:refs/heads/${branch}`]);
  return changed ? (await git(dir, ['rev-parse', 'HEAD'])).trim() : undefined;
}

/** An author for the commit when the user has none configured, rather than failing. */
async function identity(dir: string): Promise<string[]> {
  const name = await git(dir, ['config', 'user.name']).catch(() => '');
  return name.trim() ? [] : ['-c', 'user.name=gantry up', '-c', 'user.email=gantry-up@localhost'];
}

async function git(dir: string, args: string[]): Promise<string> {
  return (await run('git', args, { cwd: dir, env: { GIT_TERMINAL_PROMPT: '0' } })).stdout;
}

async function deployBootstrap(
  options: UpOptions,
): Promise<{ result: CommandResult; cluster: Cluster; errors: Array<{ message: string }> }> {
  const { engine, progress } = options;
  const request = {
    projectDir: path.join(options.dir, 'bootstrap'),
    args: { runtime: options.runtime },
    context: options.context,
    discriminator: BOOTSTRAP_DISCRIMINATOR,
    inclusion: NO_SELECTION,
    fixedImages: [],
  };
  const prepared = await prepareTarget(request, engine, { kubeConfig: options.kubeConfig, progress });
  const cluster = prepared.cluster;
  if (!cluster) throw new Error('bootstrap/: rendered without a cluster');
  const result = await deployTarget(prepared.rendered, cluster, {
    dryRun: false,
    prune: true,
    wait: true,
    timeoutMs: options.timeoutMs,
    behaviour: {
      forceApply: false,
      replaceOnError: false,
      forceReplaceOnError: false,
      abortOnError: false,
      readinessTimeoutMs: options.timeoutMs,
    },
    // Only what an older bootstrap applied carries its discriminator: pruning it is what a re-run is for.
    confirmPrune: async () => true,
    fieldManager: engine.config.fieldManager,
    progress,
  });
  return { result, cluster, errors: result.errors };
}

/** The admin token Secret (server-install.ts), with the management cluster's context. */
async function ensureAdminTokenSecretIn(options: UpOptions): Promise<void> {
  const kubeConfig = options.kubeConfig;
  kubeConfig.setCurrentContext(options.context);
  const cluster = new Cluster(new KubeClient(kubeConfig));
  try {
    if (await ensureAdminTokenSecret(cluster, options.engine.config.fieldManager))
      options.progress.step('up', `made Secret ${UP_NAMESPACE}/${ADMIN_TOKEN_SECRET} (the admin API token)`);
  } finally {
    await cluster.close();
  }
}

/** The Secret (namespace/name) holding the management cluster's deploy token, once the operator has written it beside its Cluster resource. */
async function deployTokenSecret(cluster: Cluster, options: UpOptions): Promise<string> {
  const name = `${options.managementCluster}-deploy-token`;
  options.progress.step('up', `waiting for Secret ${UP_NAMESPACE}/${name} (the operator registers the management cluster)`);
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const token = await readSecret(cluster, UP_NAMESPACE, name).then(
      (data) => data['token'],
      () => undefined,
    );
    if (token) return `${UP_NAMESPACE}/${name}`;
    if (Date.now() > deadline)
      throw new Error(`Secret ${UP_NAMESPACE}/${name} did not appear; see the operator's log in ${options.stateDir}/logs`);
    await sleep(500);
  }
}
