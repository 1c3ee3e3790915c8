/**
 * `gantry agent install --server URL --token TOKEN [--context CTX]`: installs the fleet agent into a cluster
 * (namespace gantry-agent, ServiceAccount bound to cluster-admin, token Secret, Deployment) with Gantry's own
 * engine, as `gantry controller install` does: render, server-side apply, wait for readiness, prune what an older
 * install made. The manifests are written into a private temporary project only for the render.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { AGENT_INSTALL_DISCRIMINATOR, agentInstallManifests } from '../agent/install.ts';
import { NO_SELECTION } from '../project/inclusion.ts';
import { GANTRY_IMAGE_REPOSITORY, GANTRY_VERSION } from '../version.ts';
import { toYaml } from '../yaml.ts';
import { addInstallFlags, deployInstall, type InstallFlags } from './install-project.ts';
import { addResultFlags } from './options.ts';
import { runResultCommand } from './run-action.ts';

interface AgentInstallFlags extends InstallFlags {
  server: string;
  token: string;
  image: string;
}

export function agentInstallCommand(): Command {
  const command = addInstallFlags(
    new Command('install')
      .description("install or upgrade the agent in a cluster, with the cluster's deploy token (gantry cluster create/token)")
      .requiredOption('--server <url>', 'the Gantry server, as the cluster reaches it')
      .requiredOption('--token <token>', "the cluster's deploy token")
      .option('--image <ref>', "the agent's image", `${GANTRY_IMAGE_REPOSITORY}:${GANTRY_VERSION}`),
  );
  return addResultFlags(command).action((flags: AgentInstallFlags) =>
    runResultCommand('agent-install', flags, async (run) => {
      const projectDir = await mkdtemp(path.join(tmpdir(), 'gantry-agent-install-'));
      try {
        await chmod(projectDir, 0o700);
        await writeProject(projectDir, flags);
        const request = { projectDir, args: {}, discriminator: AGENT_INSTALL_DISCRIMINATOR, inclusion: NO_SELECTION, fixedImages: [] };
        return await deployInstall(request, flags, run);
      } finally {
        await rm(projectDir, { recursive: true, force: true });
      }
    }),
  );
}

/** A one-item Kluctl project: the namespace first (a barrier), then the rest. */
async function writeProject(dir: string, flags: AgentInstallFlags): Promise<void> {
  const [namespace, ...rest] = agentInstallManifests({ server: flags.server, token: flags.token, image: flags.image });
  await writeFile(
    path.join(dir, 'deployment.yaml'),
    toYaml({ deployments: [{ path: 'namespace' }, { barrier: true }, { path: 'agent' }] }),
  );
  await mkdir(path.join(dir, 'namespace'));
  await writeFile(path.join(dir, 'namespace', 'namespace.yaml'), toYaml(namespace));
  await mkdir(path.join(dir, 'agent'));
  for (const [index, manifest] of rest.entries()) {
    await writeFile(path.join(dir, 'agent', `${index}-${manifest.kind.toLowerCase()}.yaml`), toYaml(manifest), { mode: 0o600 });
  }
}
