/**
 * What `gantry controller install` and `gantry agent install` share: their flags, and deploying an install project
 * with Gantry's own engine like `gantry deploy --prune` (render, server-side apply, wait for readiness, prune what
 * an older install made, asking first unless -y).
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { deployTarget } from '../deploy/deploy.ts';
import { prepareTarget, requireCluster } from '../target/prepare.ts';
import type { TargetRequest } from '../target/request.ts';
import { parseDuration } from '../duration.ts';
import { loadKubeConfig } from '../kube/client.ts';
import type { KubeObject } from '../kube/object.ts';
import { NO_SELECTION } from '../project/inclusion.ts';
import { toYaml } from '../yaml.ts';
import { confirm, type ResultFlags } from './options.ts';
import type { CliRun } from './cli-run.ts';
import type { CommandRun } from './run-action.ts';

export interface InstallFlags extends ResultFlags {
  kubeconfig?: string;
  context?: string;
  dryRun?: boolean;
  yes?: boolean;
  timeout: string;
}

export function addInstallFlags(command: Command): Command {
  return command
    .option('--kubeconfig <file>', 'kubeconfig to use instead of $KUBECONFIG / ~/.kube/config')
    .option('--context <name>', 'kubeconfig context to install into (default: the current context)')
    .option('--dry-run', 'server-side dry run: show what would change, persist nothing')
    .option('-y, --yes', 'do not ask before deleting objects an older install created')
    .option('--timeout <duration>', 'limit for readiness waits and deletions', '10m');
}

/** Renders `request` (its context from the flags) and deploys it with prune. */
export async function deployInstall(request: Omit<TargetRequest, 'context'>, flags: InstallFlags, run: CliRun): Promise<CommandRun> {
  const { engine, progress, signal } = run;
  const timeoutMs = parseDuration(flags.timeout);
  const kubeConfig = loadKubeConfig({ kubeconfig: flags.kubeconfig });
  const prepared = await prepareTarget({ ...request, context: flags.context }, engine, { kubeConfig, progress, signal });
  const result = await deployTarget(prepared.rendered, requireCluster(prepared), {
    dryRun: flags.dryRun ?? false,
    prune: true,
    wait: true,
    timeoutMs,
    behaviour: { forceApply: false, replaceOnError: false, forceReplaceOnError: false, abortOnError: false, readinessTimeoutMs: timeoutMs },
    confirmPrune: (count) => confirm(`Delete ${count} object(s) an older install created?`, flags.yes ?? false),
    fieldManager: engine.config.fieldManager,
    progress,
    signal,
  });
  return { prepared, result };
}

/**
 * Deploys `stages` of objects as a Kluctl project with a barrier between stages (CRDs and namespaces before what
 * uses them), written into a private temporary folder (files 0600: they may hold tokens) only for the render.
 */
export async function deployInstallObjects(
  stages: ReadonlyArray<readonly KubeObject[]>,
  discriminator: string,
  flags: InstallFlags,
  run: CliRun,
): Promise<CommandRun> {
  const projectDir = await mkdtemp(path.join(tmpdir(), 'gantry-install-'));
  try {
    await chmod(projectDir, 0o700);
    const items = stages.flatMap((_, index) => [...(index > 0 ? [{ barrier: true }] : []), { path: `stage-${index}` }]);
    await writeFile(path.join(projectDir, 'deployment.yaml'), toYaml({ deployments: items }));
    for (const [index, objects] of stages.entries()) {
      const dir = path.join(projectDir, `stage-${index}`);
      await mkdir(dir);
      for (const [position, object] of objects.entries())
        await writeFile(path.join(dir, `${position}-${object.kind.toLowerCase()}.yaml`), toYaml(object), { mode: 0o600 });
    }
    return await deployInstall({ projectDir, args: {}, discriminator, inclusion: NO_SELECTION, fixedImages: [] }, flags, run);
  } finally {
    await rm(projectDir, { recursive: true, force: true });
  }
}
