/**
 * `gantry controller install`: the checked-in install/ is what the generator produces, and the command deploys it
 * with Gantry's engine — CRDs established, RBAC in place, the controller Deployment available (kwok runs its Pod),
 * nothing to do the second time, another image with --image. The Deployment is deleted afterwards so no controller
 * is left running against the shared cluster; CRDs, namespaces and RBAC stay (other tests install them too).
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONTROLLER_NAME,
  CONTROLLER_NAMESPACE,
  IMAGE_REPOSITORY,
  INSTALL_DIR,
  installFiles,
  listFiles,
  packageVersion,
} from '../../scripts/generate-install.ts';
import { gantryJson, kubectl, kubectlJson, localContext, names } from '../support/cli.ts';

describe('install/', () => {
  it('is exactly what scripts/generate-install.ts produces (run npm run generate after changing the schemas)', async () => {
    const expected = installFiles(await packageVersion());
    expect((await listFiles(INSTALL_DIR)).sort()).toEqual([...expected.keys()].sort());
    for (const [file, content] of expected) expect(await readFile(path.join(INSTALL_DIR, file), 'utf8'), file).toBe(content);
  });
});

const CRDS = ['kluctldeployments.gitops.gantry.dev', 'alerts.gitops.gantry.dev'];
const DEPLOYMENT = `${CONTROLLER_NAMESPACE}/Deployment/${CONTROLLER_NAME}`;

async function deleteControllerDeployment(): Promise<void> {
  await kubectl(['delete', 'deployment', CONTROLLER_NAME, '-n', CONTROLLER_NAMESPACE, '--ignore-not-found', '--wait']);
}

describe('gantry controller install', { timeout: 300_000 }, () => {
  // Not from the repository: the install folder is found relative to the package, not the current directory.
  const cwd = os.tmpdir();
  beforeAll(deleteControllerDeployment);
  afterAll(deleteControllerDeployment);

  it('shows the controller as new in a dry run and creates nothing', async () => {
    const { code, result } = await gantryJson(['controller', 'install', '--dry-run'], { cwd });
    expect(result.errors).toEqual([]);
    expect(code).toBe(0);
    expect(names(result.newObjects)).toContain(DEPLOYMENT);
    expect(await kubectl(['get', 'deployments', '-n', CONTROLLER_NAMESPACE, '-o', 'name'])).not.toContain(CONTROLLER_NAME);
  });

  it('installs CRDs, RBAC and the controller Deployment, which becomes available', async () => {
    const { code, result } = await gantryJson(['controller', 'install', '--context', await localContext(), '-y'], { cwd });
    expect(result.errors).toEqual([]);
    expect(code).toBe(0);
    expect(names(result.newObjects)).toContain(DEPLOYMENT);

    for (const crd of CRDS) {
      const established = await kubectlJson<{ status: { conditions: Array<{ type: string; status: string }> } }>(['get', 'crd', crd]);
      expect(established.status.conditions).toContainEqual(expect.objectContaining({ type: 'Established', status: 'True' }));
    }

    const deployment = await kubectlJson<Record<string, any>>(['get', 'deployment', CONTROLLER_NAME, '-n', CONTROLLER_NAMESPACE]);
    expect(deployment['status'].conditions).toContainEqual(expect.objectContaining({ type: 'Available', status: 'True' }));
    expect(deployment['metadata'].labels['kluctl.io/discriminator']).toBe('gantry-controller-install');
    const container = deployment['spec'].template.spec.containers[0];
    expect(container.image).toBe(`${IMAGE_REPOSITORY}:${await packageVersion()}`);
    expect([...container.command, ...container.args]).toEqual(expect.arrayContaining(['controller', 'run', '--leader-elect']));
    expect([container.livenessProbe.httpGet.path, container.readinessProbe.httpGet.path]).toEqual(['/healthz', '/readyz']);
    expect(container.ports.map((port: { name: string }) => port.name)).toContain('metrics');
    expect(deployment['spec'].template.spec.serviceAccountName).toBe(CONTROLLER_NAME);
    // The webhook receiver's secret comes from an optional Secret; the Service leads to /hooks/git and /metrics.
    expect(container.args).toContain('--webhook-secret-file=/etc/gantry/webhook/token');
    const service = await kubectlJson<Record<string, any>>(['get', 'service', CONTROLLER_NAME, '-n', CONTROLLER_NAMESPACE]);
    expect(service['spec'].ports).toEqual([expect.objectContaining({ port: 80, targetPort: 'metrics' })]);

    await kubectl(['get', 'serviceaccount', CONTROLLER_NAME, '-n', CONTROLLER_NAMESPACE]);
    const role = await kubectlJson<{ rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }> }>([
      'get',
      'clusterrole',
      CONTROLLER_NAME,
    ]);
    expect(role.rules).toContainEqual(
      expect.objectContaining({ apiGroups: ['gitops.gantry.dev'], resources: ['kluctldeployments/status', 'alerts/status'] }),
    );
    expect(role.rules).toContainEqual(
      expect.objectContaining({ resources: ['serviceaccounts'], verbs: expect.arrayContaining(['impersonate']) }),
    );
    const bindings = await kubectlJson<{ items: Array<{ metadata: { name: string }; roleRef: { name: string } }> }>([
      'get',
      'clusterrolebindings',
      '-l',
      // The install's own: a Helm release of charts/gantry (test/e2e/chart.test.ts) has the same name label.
      'app.kubernetes.io/name=gantry-controller,kluctl.io/discriminator=gantry-controller-install',
    ]);
    expect(bindings.items.map((binding) => binding.roleRef.name).sort()).toEqual(['cluster-admin', CONTROLLER_NAME]);
    const leases = await kubectlJson<{ rules: Array<{ resources: string[] }> }>([
      'get',
      'role',
      `${CONTROLLER_NAME}-leader-election`,
      '-n',
      CONTROLLER_NAMESPACE,
    ]);
    expect(leases.rules).toEqual([expect.objectContaining({ apiGroups: ['coordination.k8s.io'], resources: ['leases'] })]);
    expect(
      await kubectl([
        'auth',
        'can-i',
        'patch',
        'kluctldeployments.gitops.gantry.dev',
        '--subresource=status',
        '-n',
        'default',
        `--as=system:serviceaccount:${CONTROLLER_NAMESPACE}:${CONTROLLER_NAME}`,
      ]),
    ).toBe('yes');
  });

  it('reports no changes when installed again', async () => {
    const { code, result } = await gantryJson(['controller', 'install'], { cwd });
    expect(result.errors).toEqual([]);
    expect(code).toBe(0);
    expect([...result.newObjects, ...result.changedObjects, ...result.deletedObjects]).toEqual([]);
  });

  it('replaces the image with --image: a change in a dry run, then in the Deployment', async () => {
    const image = `registry.invalid/gantry@sha256:${'ef'.repeat(32)}`;
    const liveImage = async () =>
      (await kubectlJson<Record<string, any>>(['get', 'deployment', CONTROLLER_NAME, '-n', CONTROLLER_NAMESPACE]))['spec'].template.spec
        .containers[0].image as string;

    const dryRun = await gantryJson(['controller', 'install', '--dry-run', '--image', image], { cwd });
    expect(dryRun.result.errors).toEqual([]);
    expect(names(dryRun.result.changedObjects)).toEqual([DEPLOYMENT]);
    expect(dryRun.result.changedObjects[0]!.diff).toContain(image);
    expect(await liveImage()).toBe(`${IMAGE_REPOSITORY}:${await packageVersion()}`);

    const { code, result } = await gantryJson(['controller', 'install', '--image', image, '-y'], { cwd });
    expect(result.errors).toEqual([]);
    expect(code).toBe(0);
    expect(names(result.changedObjects)).toEqual([DEPLOYMENT]);
    expect(await liveImage()).toBe(image);
  });
});
