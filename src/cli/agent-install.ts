/**
 * `gantry agent install --server URL --token TOKEN [--context CTX]`: installs the fleet agent into a cluster
 * (namespace gantry-agent, ServiceAccount bound to cluster-admin, token Secret, Deployment) with Gantry's own
 * engine, as `gantry controller install` does: render, server-side apply, wait for readiness, prune what an older
 * install made. The manifests are written into a private temporary project only for the render.
 */
import { Command } from 'commander';
import { AGENT_INSTALL_DISCRIMINATOR, agentInstallManifests } from '../install/agent.ts';
import { GANTRY_IMAGE_REPOSITORY, GANTRY_VERSION } from '../version.ts';
import { addInstallFlags, deployInstallObjects, type InstallFlags } from './install-project.ts';
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
      // The namespace first (a barrier), then the rest.
      const [namespace, ...rest] = agentInstallManifests({ server: flags.server, token: { value: flags.token }, image: flags.image });
      return await deployInstallObjects([[namespace!], rest], AGENT_INSTALL_DISCRIMINATOR, flags, run);
    }),
  );
}
