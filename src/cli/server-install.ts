/**
 * `gantry server install [--context CTX] [--image REF] [--storage SIZE]`: installs the fleet server into a cluster
 * (src/install/server.ts: namespace gantry-system, a Deployment on a volume for SQLite, Service gantry-server:8090)
 * with Gantry's own engine, as `gantry operator install` does. The admin token is the Secret gantry-admin-token,
 * made here with a random token unless it exists, outside the deployed objects so that re-installs keep it; the
 * command prints how to read it, never the token.
 */
import { Command, InvalidArgumentError } from 'commander';
import { Cluster } from '../kube/cluster.ts';
import { KubeClient, loadKubeConfig } from '../kube/client.ts';
import { ADMIN_TOKEN_SECRET, namespaceManifest, OPERATOR_NAMESPACE } from '../install/operator.ts';
import type { Progress } from '../progress.ts';
import {
  adminTokenHint,
  ensureAdminTokenSecret,
  inClusterServerUrl,
  SERVER_INSTALL_DISCRIMINATOR,
  serverInstallManifests,
} from '../install/server.ts';
import { GANTRY_IMAGE_REPOSITORY, GANTRY_VERSION } from '../version.ts';
import { addInstallFlags, deployInstallObjects, type InstallFlags } from './install-project.ts';
import { addResultFlags } from './options.ts';
import { runResultCommand } from './run-action.ts';

const SCOPE = 'server-install';

interface ServerInstallFlags extends InstallFlags {
  image: string;
  storage: string;
  publicUrl?: URL;
}

export function serverInstallCommand(): Command {
  const command = addInstallFlags(
    new Command('install')
      .description(`install or upgrade the server in a cluster (${OPERATOR_NAMESPACE}), its admin token in Secret ${ADMIN_TOKEN_SECRET}`)
      .option('--image <ref>', "the server's image", `${GANTRY_IMAGE_REPOSITORY}:${GANTRY_VERSION}`)
      .option('--storage <size>', "size of the database's volume (a Kubernetes quantity)", '1Gi')
      .option(
        '--public-url <url>',
        "where browsers reach the server through your ingress, e.g. https://gantry.example.com (the server's --public-url: Secure cookies, the origin browser changes must come from)",
        publicUrlArg,
      ),
  );
  return addResultFlags(command).action((flags: ServerInstallFlags) =>
    runResultCommand(SCOPE, flags, async (run) => {
      // A dry run persists nothing, the token Secret included.
      if (!flags.dryRun) await ensureSecret(flags, run.engine.config.fieldManager, run.progress);
      const stages = [
        [namespaceManifest()],
        serverInstallManifests({ image: flags.image, storage: flags.storage, publicUrl: flags.publicUrl?.origin }),
      ];
      const deployed = await deployInstallObjects(stages, SERVER_INSTALL_DISCRIMINATOR, flags, run);
      if (deployed.result.errors.length === 0)
        run.progress.step(SCOPE, `the server is ${inClusterServerUrl()}; its admin token: ${adminTokenHint()}`);
      return deployed;
    }),
  );
}

async function ensureSecret(flags: ServerInstallFlags, fieldManager: string, progress: Progress): Promise<void> {
  const cluster = new Cluster(new KubeClient(loadKubeConfig({ kubeconfig: flags.kubeconfig, context: flags.context })));
  try {
    const made = await ensureAdminTokenSecret(cluster, fieldManager);
    progress.step(SCOPE, `${made ? 'made' : 'kept'} Secret ${OPERATOR_NAMESPACE}/${ADMIN_TOKEN_SECRET} (the admin API token)`);
  } finally {
    await cluster.close();
  }
}

/** @throws InvalidArgumentError unless `text` is an http(s) URL without a path. */
export function publicUrlArg(text: string): URL {
  const url = URL.canParse(text) ? new URL(text) : undefined;
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.pathname !== '/' || url.search || url.hash)
    throw new InvalidArgumentError(`'${text}' is not an http(s) URL of a host (e.g. https://gantry.example.com)`);
  return url;
}
