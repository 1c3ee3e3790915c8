/**
 * `gantry operator install --server URL --token-file FILE [--context CTX]`: installs the deployment operator into
 * the management cluster (the fleet's CRDs, namespace gantry-system, least-privilege RBAC, the admin token Secret
 * and a Deployment) with Gantry's own engine, as `gantry agent install` does: render, server-side apply, wait for
 * readiness, prune what an older install made.
 */
import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import { fleetCrds } from '../operator/crds.ts';
import { namespaceManifest, OPERATOR_INSTALL_DISCRIMINATOR, operatorWorkload } from '../operator/install.ts';
import type { KubeObject } from '../kube/object.ts';
import { GANTRY_IMAGE_REPOSITORY, GANTRY_VERSION } from '../version.ts';
import { addInstallFlags, deployInstallObjects, type InstallFlags } from './install-project.ts';
import { addResultFlags } from './options.ts';
import { runResultCommand } from './run-action.ts';

interface OperatorInstallFlags extends InstallFlags {
  server: string;
  tokenFile: string;
  image: string;
}

export function operatorInstallCommand(): Command {
  const command = addInstallFlags(
    new Command('install')
      .description('install or upgrade the operator and the CRDs in the management cluster, with an admin API token')
      .requiredOption('--server <url>', "the Gantry server, as the operator's pod reaches it")
      .requiredOption('--token-file <file>', 'file holding an admin API token (never on the command line)')
      .option('--image <ref>', "the operator's image", `${GANTRY_IMAGE_REPOSITORY}:${GANTRY_VERSION}`),
  );
  return addResultFlags(command).action((flags: OperatorInstallFlags) =>
    runResultCommand('operator-install', flags, async (run) => {
      const adminToken = (await readFile(flags.tokenFile, 'utf8')).trim();
      if (!adminToken) throw new Error(`--token-file ${flags.tokenFile} is empty`);
      const workload = operatorWorkload({ server: flags.server, image: flags.image, adminToken });
      const stages: KubeObject[][] = [[...(fleetCrds() as KubeObject[]), namespaceManifest()], workload];
      return await deployInstallObjects(stages, OPERATOR_INSTALL_DISCRIMINATOR, flags, run);
    }),
  );
}
