/**
 * Bad input gives one clear line per problem, a non-zero exit, and nothing applied after a render error.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeCopy, writeProject } from '../support/fixtures.ts';
import { gantry, gantryJson, kubectl, localContext } from '../support/cli.ts';

const kluctl = (name: string) => `discriminator: gantry-e2e-${name}\ntargets:\n  - name: t\n`;
const namespace = (name: string) => `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${name}\n`;
const configMap = (name: string, data = 'value') => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  key: ${data}\n`;

let context = '';
const dirs: string[] = [];
beforeAll(async () => {
  context = await localContext();
});
afterAll(async () => {
  for (const dir of dirs) {
    await gantry(['delete', '-y', '-t', 't', '--project-dir', dir, '--context', context]);
    await removeCopy(dir);
  }
});

async function project(files: Record<string, string>): Promise<string> {
  const dir = await writeProject(files);
  dirs.push(dir);
  return dir;
}

async function namespaceExists(name: string): Promise<boolean> {
  return (await kubectl(['get', 'namespaces', '-o', 'name'])).split('\n').includes(`namespace/${name}`);
}

describe('bad input', { timeout: 300_000 }, () => {
  it('refuses an unknown target, naming the known ones', async () => {
    const dir = await project({ '.kluctl.yaml': kluctl('unknown'), 'deployment.yaml': 'deployments: []\n' });
    const { code, result } = await gantryJson(['deploy', '-t', 'nope', '--project-dir', dir, '--context', context]);
    expect(code).toBe(1);
    expect(result.errors.map((error) => error.message)).toEqual([expect.stringMatching(/target 'nope' not found .*known targets: t/)]);
  });

  it('applies nothing when one template fails, and names its file and line', async () => {
    const dir = await project({
      '.kluctl.yaml': kluctl('render-error'),
      'deployment.yaml': 'deployments:\n  - path: ns\n  - barrier: true\n  - path: app\n',
      'ns/namespace.yaml': namespace('gantry-e2e-render-error'),
      'app/good.yaml': configMap('good'),
      'app/bad.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n  namespace: gantry-e2e-render-error\ndata:\n  key: "{{ no_such_var }}"\n`,
    });
    const { code, result } = await gantryJson(['deploy', '-t', 't', '--project-dir', dir, '--context', context]);
    expect(code).toBe(1);
    expect(result.errors.map((error) => error.message)).toEqual([
      expect.stringMatching(/^app\/bad\.yaml:7: UndefinedError: 'no_such_var' is undefined/),
    ]);
    expect(result.newObjects).toEqual([]);
    expect(await namespaceExists('gantry-e2e-render-error')).toBe(false);
  });

  it('names file and line of invalid YAML in a manifest', async () => {
    const dir = await project({
      '.kluctl.yaml': kluctl('yaml-error'),
      'deployment.yaml': 'deployments:\n  - path: app\n',
      'app/bad.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n data: [\n',
    });
    const { code, result } = await gantryJson(['deploy', '-t', 't', '--project-dir', dir, '--context', context]);
    expect(code).toBe(1);
    // The file as the project has it, not the render's temporary copy.
    expect(result.errors[0]?.message).toMatch(/^app\/bad\.yaml:5: invalid YAML/);
  });

  it("names a failing kustomize build by the item's folder in the project", async () => {
    const dir = await project({
      '.kluctl.yaml': kluctl('kustomize-error'),
      'deployment.yaml': 'deployments:\n  - path: app\n',
      'app/kustomization.yaml': 'resources:\n  - configmap.yaml\npatches:\n  - path: missing-patch.yaml\n',
      'app/configmap.yaml': configMap('good'),
    });
    const run = await gantry(['render', '-t', 't', '--project-dir', dir, '--offline-kubernetes']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/kustomize build of app failed: .*missing-patch\.yaml/s);
    expect(run.stderr).not.toContain('gantry-render-');
  });

  it('names the object the API server rejects and still applies the others', async () => {
    const dir = await project({
      '.kluctl.yaml': kluctl('rejected'),
      'deployment.yaml': 'deployments:\n  - path: app\noverrideNamespace: gantry-e2e-rejected\n',
      'app/namespace.yaml': namespace('gantry-e2e-rejected'),
      'app/good.yaml': configMap('good'),
      'app/bad.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndataa:\n  key: value\n',
    });
    const { code, result } = await gantryJson(['deploy', '-t', 't', '--project-dir', dir, '--context', context]);
    expect(code).toBe(1);
    expect(result.errors).toEqual([
      {
        object: expect.objectContaining({ kind: 'ConfigMap', name: 'bad', namespace: 'gantry-e2e-rejected' }),
        message: expect.stringMatching(/\.dataa: field not declared in schema/),
      },
    ]);
    expect(result.newObjects.map((ref) => ref.name).sort()).toEqual(['gantry-e2e-rejected', 'good']);
  });

  it('says which object is not ready and why when readiness times out', async () => {
    const dir = await project({
      '.kluctl.yaml': kluctl('not-ready'),
      'deployment.yaml': 'deployments:\n  - path: app\noverrideNamespace: gantry-e2e-not-ready\n',
      'app/namespace.yaml': namespace('gantry-e2e-not-ready'),
      'app/claim.yaml':
        'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  storageClassName: no-such-class\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n',
      'app/deploy.yaml': [
        'apiVersion: apps/v1',
        'kind: Deployment',
        'metadata:',
        '  name: needs-volume',
        'spec:',
        '  selector:',
        '    matchLabels: {app: needs-volume}',
        '  template:',
        '    metadata:',
        '      labels: {app: needs-volume}',
        '    spec:',
        '      containers:',
        '        - name: main',
        '          image: busybox',
        '          volumeMounts: [{name: data, mountPath: /data}]',
        '      volumes:',
        '        - name: data',
        '          persistentVolumeClaim: {claimName: data}',
        '',
      ].join('\n'),
    });
    const { code, result } = await gantryJson(['deploy', '-t', 't', '--project-dir', dir, '--context', context, '--timeout', '15s']);
    expect(code).toBe(1);
    const byName = Object.fromEntries(result.errors.map((error) => [error.object?.name, error.message]));
    expect(byName['needs-volume']).toMatch(/not ready before the timeout: .*PersistentVolumeClaim\/data: .*Pending/);
    expect(byName['data']).toMatch(/Pending/);
  });

  it('reports an unreachable cluster in one line', async () => {
    const dir = await project({
      '.kluctl.yaml': kluctl('unreachable'),
      'deployment.yaml': 'deployments:\n  - path: app\n',
      'app/cm.yaml': configMap('x'),
    });
    const kubeconfig = await writeProject({
      config:
        'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: x}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
    });
    dirs.push(kubeconfig);
    const run = await gantry(['deploy', '-t', 't', '--project-dir', dir, '--kubeconfig', `${kubeconfig}/config`]);
    expect(run.code).toBe(1);
    expect(
      run.stdout
        .trim()
        .split('\n')
        .filter((line) => line.includes('cannot reach')),
    ).toEqual([expect.stringMatching(/^ *cannot reach the Kubernetes API server at https:\/\/127\.0\.0\.1:1/)]);
  });
});
