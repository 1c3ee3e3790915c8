/**
 * The Helm chart charts/gantry, with the real helm binary: its generated files (Chart.yaml, crds/) are the
 * generator's, `helm lint --strict` passes, its default rendering is object for object what `gantry controller
 * install` deploys (the render of install/'s target `default`) but for Helm's labels and the release namespace, values
 * change the fields they are for, and a release installed on the local cluster runs (kwok runs its Pods), upgrades and
 * uninstalls. The release has names of its own (release gantry-chart-e2e, its own namespaces), so install/'s objects
 * on the shared cluster (test/e2e/controller-install.test.ts) are untouched; the CRDs in crds/ are only ever created
 * by Helm when missing, and never deleted.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterLayout } from '../../scripts/cluster/layout.ts';
import {
  CHART_DIR,
  chartFiles,
  CONTROLLER_NAME,
  CONTROLLER_NAMESPACE,
  IMAGE_REPOSITORY,
  INSTALL_DIR,
  listFiles,
  packageVersion,
} from '../../scripts/generate-install.ts';
import { DEFAULT_RESULTS_NAMESPACE } from '../../src/deploy/result-store.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { parseYamlDocuments } from '../../src/yaml.ts';
import { gantry, KUBECONFIG, kubectl, kubectlJson } from '../support/cli.ts';
import { waitFor } from '../support/controller.ts';

const HELM = path.join(clusterLayout().bin, 'helm');

async function helm(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const result = await execa(HELM, args, { env: { KUBECONFIG }, reject: false });
  return { code: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/** `helm template` of the chart with `--set` values, parsed; the release is `gantry` in gantry-system unless given. */
async function template(
  values: Record<string, string> = {},
  release = { name: 'gantry', namespace: CONTROLLER_NAMESPACE },
): Promise<KubeObject[]> {
  const sets = Object.entries(values).flatMap(([key, value]) => ['--set', `${key}=${value}`]);
  const run = await helm(['template', release.name, CHART_DIR, '-n', release.namespace, '--include-crds', ...sets]);
  if (run.code !== 0) throw new Error(`helm template failed:\n${run.stderr}`);
  return parseYamlDocuments(run.stdout, 'helm template') as KubeObject[];
}

const keyOf = (object: KubeObject) => `${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name ?? ''}`;

function find(objects: readonly KubeObject[], kind: string, name: string): Record<string, any> {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} among ${objects.map(keyOf).join(', ')}`);
  return found;
}

/** Labels Helm's conventions add to the chart's objects and selectors. */
const HELM_LABELS = ['helm.sh/chart', 'app.kubernetes.io/managed-by', 'app.kubernetes.io/instance', 'app.kubernetes.io/version'];

/**
 * `object` without what tells a Helm release and a Kluctl deployment apart: Helm's labels, and the kluctl.io labels
 * and annotations Gantry's render adds (discriminator, tags, item folder).
 */
function withoutOwnerMarks(object: KubeObject): KubeObject {
  const copy = structuredClone(object) as Record<string, any>;
  const strip = (map: Record<string, string> | undefined) => {
    for (const key of Object.keys(map ?? {})) if (HELM_LABELS.includes(key) || key.startsWith('kluctl.io/')) delete map![key];
  };
  for (const field of ['labels', 'annotations']) {
    strip(copy['metadata'][field]);
    if (copy['metadata'][field] && Object.keys(copy['metadata'][field]).length === 0) delete copy['metadata'][field];
  }
  if (object.kind === 'Deployment') {
    strip(copy['spec'].selector.matchLabels);
    strip(copy['spec'].template.metadata.labels);
  }
  if (object.kind === 'Service') strip(copy['spec'].selector);
  return copy as KubeObject;
}

const containerOf = (deployment: Record<string, any>) => deployment['spec'].template.spec.containers[0];

describe('charts/gantry', () => {
  it('has the Chart.yaml and crds/ scripts/generate-install.ts writes (run npm run generate)', async () => {
    const expected = chartFiles(await packageVersion());
    const generated = (await listFiles(CHART_DIR)).filter((file) => file === 'Chart.yaml' || file.startsWith('crds/'));
    expect(generated.sort()).toEqual([...expected.keys()].sort());
    for (const [file, content] of expected) expect(await readFile(path.join(CHART_DIR, file), 'utf8'), file).toBe(content);
  });

  it('passes helm lint --strict, with default values and with every option set', async () => {
    const plain = await helm(['lint', '--strict', CHART_DIR]);
    expect(plain.stdout, plain.stderr).toContain('0 chart(s) failed');
    expect(plain.code).toBe(0);
    const everything = await helm([
      'lint',
      '--strict',
      CHART_DIR,
      ...['--set', 'image.digest=sha256:0123', '--set', 'webhook.token=t', '--set', 'metrics.serviceMonitor.enabled=true'],
      ...[
        '--set',
        'controller.extraArgs[0]=--concurrency=8',
        '--set',
        'controller.extraEnv[0].name=A',
        '--set',
        'controller.extraEnv[0].value=b',
      ],
      ...['--set', 'controller.nodeSelector.zone=a', '--set', 'imagePullSecrets[0].name=regcred', '--set', 'rbac.clusterAdmin=false'],
    ]);
    expect(everything.code, everything.stdout).toBe(0);
  });

  it('renders, with default values, the objects of gantry controller install, field for field', async () => {
    const installed = await gantry(['render', '--project-dir', INSTALL_DIR, '-t', 'default', '--offline-kubernetes', '-o', 'json']);
    expect(installed.code, installed.stderr).toBe(0);
    const fromInstall = new Map((JSON.parse(installed.stdout) as KubeObject[]).map((object) => [keyOf(object), object]));
    const fromChart = new Map((await template()).map((object) => [keyOf(object), object]));

    // The release namespace is Helm's (helm install -n gantry-system --create-namespace), not a template's.
    expect([...fromChart.keys()].sort()).toEqual(
      [...fromInstall.keys()].filter((key) => key !== `Namespace//${CONTROLLER_NAMESPACE}`).sort(),
    );
    expect([...fromChart.keys()]).toEqual(
      expect.arrayContaining([
        'CustomResourceDefinition//kluctldeployments.gitops.gantry.dev',
        'CustomResourceDefinition//alerts.gitops.gantry.dev',
        `Namespace//${DEFAULT_RESULTS_NAMESPACE}`,
        `ClusterRole//${CONTROLLER_NAME}`,
        `ClusterRoleBinding//${CONTROLLER_NAME}-cluster-admin`,
        `Role/${DEFAULT_RESULTS_NAMESPACE}/${CONTROLLER_NAME}-results`,
        `Deployment/${CONTROLLER_NAMESPACE}/${CONTROLLER_NAME}`,
        `Service/${CONTROLLER_NAMESPACE}/${CONTROLLER_NAME}`,
      ]),
    );
    for (const [key, object] of fromChart) expect(withoutOwnerMarks(object), key).toEqual(withoutOwnerMarks(fromInstall.get(key)!));

    // What tells them apart is Helm's labels, and the release in the selector.
    const deployment = fromChart.get(`Deployment/${CONTROLLER_NAMESPACE}/${CONTROLLER_NAME}`)!;
    expect(deployment.metadata.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'Helm',
      'helm.sh/chart': `gantry-${await packageVersion()}`,
    });
    expect((deployment as Record<string, any>)['spec'].selector.matchLabels).toEqual({
      'app.kubernetes.io/name': CONTROLLER_NAME,
      'app.kubernetes.io/instance': 'gantry',
    });
    expect(containerOf(deployment).image).toBe(`${IMAGE_REPOSITORY}:${await packageVersion()}`);
  });

  it('names objects after the release, and puts them in its namespace', async () => {
    const objects = await template({}, { name: 'cd', namespace: 'tools' });
    const deployment = find(objects, 'Deployment', 'cd-gantry-controller');
    expect(deployment['metadata'].namespace).toBe('tools');
    expect(deployment['spec'].template.spec.serviceAccountName).toBe('cd-gantry-controller');
    expect(find(objects, 'ClusterRoleBinding', 'cd-gantry-controller-cluster-admin')['subjects']).toEqual([
      { kind: 'ServiceAccount', name: 'cd-gantry-controller', namespace: 'tools' },
    ]);
    expect(find(objects, 'RoleBinding', 'cd-gantry-controller-leader-election')['metadata'].namespace).toBe('tools');
    expect(find(objects, 'Role', 'cd-gantry-controller-results')['metadata'].namespace).toBe(DEFAULT_RESULTS_NAMESPACE);
    expect(objects.filter((object) => object.kind === 'Namespace').map((object) => object.metadata.name)).toEqual([
      DEFAULT_RESULTS_NAMESPACE,
    ]);
  });

  it('takes the image by digest over its tag, and by tag', async () => {
    const digest = `sha256:${'ab'.repeat(32)}`;
    const byDigest = find(await template({ 'image.digest': digest, 'image.tag': '9.9.9' }), 'Deployment', CONTROLLER_NAME);
    expect(containerOf(byDigest).image).toBe(`${IMAGE_REPOSITORY}@${digest}`);
    const byTag = find(
      await template({ 'image.repository': 'registry.example/gantry', 'image.tag': '9.9.9' }),
      'Deployment',
      CONTROLLER_NAME,
    );
    expect(containerOf(byTag).image).toBe('registry.example/gantry:9.9.9');
  });

  it('runs any number of replicas, all with leader election', async () => {
    const deployment = find(await template({ 'controller.replicas': '3' }), 'Deployment', CONTROLLER_NAME);
    expect(deployment['spec'].replicas).toBe(3);
    expect(containerOf(deployment).args).toContain('--leader-elect');
  });

  it('makes a ServiceMonitor for the Service only when asked to', async () => {
    expect((await template()).map((object) => object.kind)).not.toContain('ServiceMonitor');
    const objects = await template({
      'metrics.serviceMonitor.enabled': 'true',
      'metrics.serviceMonitor.interval': '30s',
      'metrics.serviceMonitor.labels.release': 'kube-prometheus-stack',
    });
    const monitor = find(objects, 'ServiceMonitor', CONTROLLER_NAME);
    expect(monitor['apiVersion']).toBe('monitoring.coreos.com/v1');
    expect(monitor['metadata'].labels['release']).toBe('kube-prometheus-stack');
    expect(monitor['spec'].endpoints).toEqual([{ port: 'http', path: '/metrics', interval: '30s' }]);
    // It selects the controller's Service, by its labels and the name of its port.
    const service = find(objects, 'Service', CONTROLLER_NAME);
    expect(service['metadata'].labels).toMatchObject(monitor['spec'].selector.matchLabels);
    expect(service['spec'].ports.map((port: { name: string }) => port.name)).toContain('http');
  });

  it('mounts the webhook token from a Secret it makes, or from an existing one, never both', async () => {
    const volumeOf = (deployment: Record<string, any>) =>
      deployment['spec'].template.spec.volumes.find((volume: { name: string }) => volume.name === 'webhook-token').secret;

    const made = await template({ 'webhook.token': 's3cret' });
    const secret = find(made, 'Secret', 'gantry-webhook-token');
    expect(Buffer.from(secret['data'].token, 'base64').toString()).toBe('s3cret');
    const deployment = find(made, 'Deployment', CONTROLLER_NAME);
    expect(volumeOf(deployment).secretName).toBe('gantry-webhook-token');
    // A new token restarts the Pods: the controller reads it when it starts.
    const rotated = find(await template({ 'webhook.token': 'other' }), 'Deployment', CONTROLLER_NAME);
    expect(rotated['spec'].template.metadata.annotations['checksum/webhook-token']).not.toBe(
      deployment['spec'].template.metadata.annotations['checksum/webhook-token'],
    );

    const existing = await template({ 'webhook.existingSecret': 'git-hooks' });
    expect(existing.map((object) => object.kind)).not.toContain('Secret');
    expect(volumeOf(find(existing, 'Deployment', CONTROLLER_NAME)).secretName).toBe('git-hooks');

    await expect(template({ 'webhook.existingSecret': 'git-hooks', 'webhook.token': 's3cret' })).rejects.toThrow(
      'give existingSecret or token, not both',
    );
  });

  it('moves command results to another namespace, and leaves out the cluster-admin binding when told', async () => {
    const objects = await template({ 'commandResults.namespace': CONTROLLER_NAMESPACE, 'rbac.clusterAdmin': 'false' });
    expect(objects.map((object) => object.kind)).not.toContain('Namespace');
    expect(containerOf(find(objects, 'Deployment', CONTROLLER_NAME)).args).toContain(`--command-result-namespace=${CONTROLLER_NAMESPACE}`);
    expect(find(objects, 'Role', `${CONTROLLER_NAME}-results`)['metadata'].namespace).toBe(CONTROLLER_NAMESPACE);
    expect(find(objects, 'ClusterRole', CONTROLLER_NAME)['rules']).toContainEqual(
      expect.objectContaining({ resources: ['namespaces'], resourceNames: [CONTROLLER_NAMESPACE] }),
    );
    expect(objects.filter((object) => object.kind === 'ClusterRoleBinding').map((object) => object.metadata.name)).toEqual([
      CONTROLLER_NAME,
    ]);
    // Without cluster-admin, the target lock's Leases still come from a Role of their own.
    const targetLock = find(objects, 'Role', `${CONTROLLER_NAME}-target-lock`);
    expect(targetLock['metadata'].namespace).toBe('kube-system');
    expect(targetLock['rules']).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
    ]);
    expect(find(objects, 'RoleBinding', `${CONTROLLER_NAME}-target-lock`)['subjects']).toEqual([
      { kind: 'ServiceAccount', name: CONTROLLER_NAME, namespace: CONTROLLER_NAMESPACE },
    ]);
  });
});

describe('helm install of charts/gantry', { timeout: 300_000 }, () => {
  const RELEASE = 'gantry-chart-e2e';
  const NAMESPACE = 'gantry-chart-e2e';
  const RESULTS = 'gantry-chart-e2e-results';
  const NAME = `${RELEASE}-controller`;
  const base = ['-n', NAMESPACE, '--set', `commandResults.namespace=${RESULTS}`, '--wait', '--timeout', '3m'];

  async function removeRelease(): Promise<void> {
    const uninstalled = await helm(['uninstall', RELEASE, '-n', NAMESPACE, '--ignore-not-found', '--wait', '--timeout', '3m']);
    if (uninstalled.code !== 0) throw new Error(`helm uninstall ${RELEASE} failed:\n${uninstalled.stderr}`);
    await kubectl(['delete', 'namespace', NAMESPACE, '--ignore-not-found', '--wait=true', '--timeout=120s']);
  }
  beforeAll(removeRelease);
  afterAll(removeRelease);

  async function deployment(): Promise<Record<string, any>> {
    return kubectlJson<Record<string, any>>(['get', 'deployment', NAME, '-n', NAMESPACE]);
  }

  /** The Deployment once its rollout is complete (every replica updated and available), within 2 minutes. */
  function rolledOut(replicas: number): Promise<Record<string, any>> {
    let last: Record<string, any> | undefined;
    return waitFor(
      async () => {
        last = await deployment();
        const status = last['status'] ?? {};
        const available = (status.conditions ?? []).some(
          (c: { type: string; status: string }) => c.type === 'Available' && c.status === 'True',
        );
        return available &&
          status.observedGeneration === last['metadata'].generation &&
          status.updatedReplicas === replicas &&
          status.availableReplicas === replicas &&
          status.replicas === replicas
          ? last
          : undefined;
      },
      120_000,
      () => `Deployment ${NAMESPACE}/${NAME} rolled out with ${replicas} replica(s): ${JSON.stringify(last?.['status'])}`,
    );
  }

  it('installs into a new namespace; the CRDs are established and the controller becomes available', async () => {
    const installed = await helm(['install', RELEASE, CHART_DIR, '--create-namespace', ...base]);
    expect(installed.code, installed.stderr).toBe(0);

    for (const crd of ['kluctldeployments.gitops.gantry.dev', 'alerts.gitops.gantry.dev']) {
      const established = await kubectlJson<{ status: { conditions: Array<{ type: string; status: string }> } }>(['get', 'crd', crd]);
      expect(established.status.conditions).toContainEqual(expect.objectContaining({ type: 'Established', status: 'True' }));
    }
    const live = await rolledOut(1);
    expect(containerOf(live).image).toBe(`${IMAGE_REPOSITORY}:${await packageVersion()}`);
    expect(containerOf(live).args).toContain(`--command-result-namespace=${RESULTS}`);
    expect(live['metadata'].labels['app.kubernetes.io/managed-by']).toBe('Helm');

    // The RBAC works for the release's ServiceAccount: status of KluctlDeployments anywhere, results in their namespace.
    const as = `--as=system:serviceaccount:${NAMESPACE}:${NAME}`;
    expect(
      await kubectl(['auth', 'can-i', 'patch', 'kluctldeployments.gitops.gantry.dev', '--subresource=status', '-n', 'default', as]),
    ).toBe('yes');
    expect(await kubectl(['auth', 'can-i', 'create', 'secrets', '-n', RESULTS, as])).toBe('yes');
    expect(await kubectl(['auth', 'can-i', 'create', 'leases.coordination.k8s.io', '-n', NAMESPACE, as])).toBe('yes');
    const service = await kubectlJson<Record<string, any>>(['get', 'service', NAME, '-n', NAMESPACE]);
    expect(service['spec'].ports).toEqual([expect.objectContaining({ name: 'http', port: 80, targetPort: 'metrics' })]);
  });

  it('upgrades to an image digest, two replicas and a webhook token', async () => {
    const digest = `sha256:${'cd'.repeat(32)}`;
    const upgraded = await helm([
      'upgrade',
      RELEASE,
      CHART_DIR,
      ...base,
      ...['--set', `image.digest=${digest}`, '--set', 'controller.replicas=2', '--set', 'webhook.token=e2e-token'],
    ]);
    expect(upgraded.code, upgraded.stderr).toBe(0);

    const live = await rolledOut(2);
    expect(containerOf(live).image).toBe(`${IMAGE_REPOSITORY}@${digest}`);
    const secret = await kubectlJson<{ data: { token: string } }>(['get', 'secret', `${RELEASE}-webhook-token`, '-n', NAMESPACE]);
    expect(Buffer.from(secret.data.token, 'base64').toString()).toBe('e2e-token');
    const volume = live['spec'].template.spec.volumes.find((entry: { name: string }) => entry.name === 'webhook-token');
    expect(volume.secret.secretName).toBe(`${RELEASE}-webhook-token`);
    const pods = await kubectlJson(['get', 'pods', '-n', NAMESPACE, '-l', `app.kubernetes.io/instance=${RELEASE}`]);
    expect(pods.items.filter((pod) => !pod['metadata'].deletionTimestamp).map((pod) => pod['spec'].containers[0].image)).toEqual([
      `${IMAGE_REPOSITORY}@${digest}`,
      `${IMAGE_REPOSITORY}@${digest}`,
    ]);
  });

  it('uninstalls everything but the CRDs', async () => {
    const uninstalled = await helm(['uninstall', RELEASE, '-n', NAMESPACE, '--wait', '--timeout', '3m']);
    expect(uninstalled.code, uninstalled.stderr).toBe(0);
    const left = async (args: string[]) => (await kubectl(['get', ...args, '--ignore-not-found', '-o', 'name'])).trim();
    expect(await left(['deployment', NAME, '-n', NAMESPACE])).toBe('');
    expect(await left(['clusterrole', NAME])).toBe('');
    expect(await left(['clusterrolebinding', NAME, `${NAME}-cluster-admin`])).toBe('');
    expect(await left(['namespace', RESULTS])).toBe('');
    expect(await left(['crd', 'kluctldeployments.gitops.gantry.dev'])).not.toBe('');
  });
});
