/**
 * `gantry operator install --server URL [--token-file FILE] [--context CTX]`: installs the deployment operator into
 * the management cluster (the fleet's CRDs, namespace gantry-system, least-privilege RBAC, the admin token Secret
 * and a Deployment) with Gantry's own engine, as `gantry agent install` does: render, server-side apply, wait for
 * readiness, prune what an older install made. Without --token-file the token is the one already in the Secret
 * gantry-admin-token (`gantry server install` makes it), kept in the install's objects so that no re-install prunes
 * it.
 */
import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import { Cluster } from '../kube/cluster.ts';
import { KubeClient, loadKubeConfig } from '../kube/client.ts';
import { fleetCrds } from '../install/fleet-crds.ts';
import {
  ADMIN_TOKEN_SECRET,
  namespaceManifest,
  OPERATOR_INSTALL_DISCRIMINATOR,
  OPERATOR_NAMESPACE,
  operatorWorkload,
} from '../install/operator.ts';
import type { KubeObject } from '../kube/object.ts';
import { GANTRY_IMAGE_REPOSITORY, GANTRY_VERSION } from '../version.ts';
import { addInstallFlags, deployInstallObjects, type InstallFlags } from './install-project.ts';
import { addResultFlags } from './options.ts';
import { runResultCommand } from './run-action.ts';

interface OperatorInstallFlags extends InstallFlags {
  server: string;
  tokenFile?: string;
  image: string;
}

export function operatorInstallCommand(): Command {
  const command = addInstallFlags(
    new Command('install')
      .description('install or upgrade the operator and the CRDs in the management cluster, with an admin API token')
      .requiredOption('--server <url>', "the Gantry server, as the operator's pod reaches it")
      .option(
        '--token-file <file>',
        `file holding an admin API token (never on the command line); default: the one in Secret ${ADMIN_TOKEN_SECRET}`,
      )
      .option('--image <ref>', "the operator's image", `${GANTRY_IMAGE_REPOSITORY}:${GANTRY_VERSION}`),
  );
  return addResultFlags(command).action((flags: OperatorInstallFlags) =>
    runResultCommand('operator-install', flags, async (run) => {
      const adminToken = flags.tokenFile ? await readTokenFile(flags.tokenFile) : await installedAdminToken(flags);
      const workload = operatorWorkload({ server: flags.server, image: flags.image, adminToken });
      const stages: KubeObject[][] = [[...(fleetCrds() as KubeObject[]), namespaceManifest()], workload];
      return await deployInstallObjects(stages, OPERATOR_INSTALL_DISCRIMINATOR, flags, run);
    }),
  );
}

/** @throws Error naming the file when it is empty. */
async function readTokenFile(file: string): Promise<string> {
  const token = (await readFile(file, 'utf8')).trim();
  if (!token) throw new Error(`--token-file ${file} is empty`);
  return token;
}

/**
 * The token in Secret gantry-admin-token.
 * @throws Error saying how to make the Secret when it does not exist or holds no token; the API server's error when
 *   it cannot be read.
 */
async function installedAdminToken(flags: OperatorInstallFlags): Promise<string> {
  const cluster = new Cluster(new KubeClient(loadKubeConfig({ kubeconfig: flags.kubeconfig, context: flags.context })));
  try {
    const secret = await cluster.get({ group: '', version: 'v1', kind: 'Secret', namespace: OPERATOR_NAMESPACE, name: ADMIN_TOKEN_SECRET });
    const encoded = (secret?.['data'] as Record<string, string> | undefined)?.['token'];
    const token = encoded === undefined ? '' : Buffer.from(encoded, 'base64').toString('utf8').trim();
    if (!token)
      throw new Error(
        `no --token-file, and no token in Secret ${OPERATOR_NAMESPACE}/${ADMIN_TOKEN_SECRET}: give --token-file, or run gantry server install first`,
      );
    return token;
  } finally {
    await cluster.close();
  }
}
