/**
 * A project reads no file outside its root: a vars file, an item folder or a kustomization naming one with `../` or
 * through a symlink fails naming the file and the link, and the outside file's content appears nowhere. Kustomize runs
 * with LoadRestrictionsNone (as in Kluctl), so the paths of its kustomizations are checked before it runs.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { removeCopy, writeProject } from '../support/fixtures.ts';
import { gantry, localContext, type CliRun } from '../support/cli.ts';

const marker = `GANTRY-LEAK-${randomBytes(6).toString('hex')}`;
const kluctl = 'discriminator: gantry-e2e-confinement\ntargets:\n  - name: t\n';
const configMap = (value: string, name = 'cm') =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: default\ndata:\n  key: "${value}"\n`;
/** A kustomization generating a ConfigMap from `source` (a configMapGenerator `files` entry). */
const generating = (source: string) => `configMapGenerator:\n  - name: leak\n    namespace: default\n    files:\n      - ${source}\n`;

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await removeCopy(dir);
});

/**
 * Writes `files` under `<tmp>/project` beside `<tmp>/secret.yml` and `<tmp>/outside/secret.yml` (both holding the
 * marker), makes `links` (path in the project -> target as written), and returns the project's folder.
 */
async function project(files: Record<string, string>, links: Record<string, string> = {}): Promise<string> {
  const top = await writeProject({
    'secret.yml': `marker: ${marker}\n`,
    'outside/secret.yml': `marker: ${marker}\n`,
    'outside/cm.yaml': configMap(marker),
    ...Object.fromEntries(Object.entries(files).map(([file, content]) => [`project/${file}`, content])),
  });
  dirs.push(top);
  const dir = path.join(top, 'project');
  await mkdir(dir, { recursive: true });
  for (const [link, target] of Object.entries(links)) {
    await mkdir(path.dirname(path.join(dir, link)), { recursive: true });
    await symlink(target, path.join(dir, link));
  }
  return dir;
}

async function render(dir: string): Promise<CliRun> {
  return gantry(['render', '-t', 't', '--project-dir', dir, '--offline-kubernetes']);
}

function expectRefused(run: CliRun, message: RegExp): void {
  expect(run.stdout + run.stderr).not.toContain(marker);
  expect(run.code).not.toBe(0);
  expect(run.stderr).toMatch(message);
}

describe('files outside the project', { timeout: 300_000 }, () => {
  it("refuses a vars file named '../secret.yml'", async () => {
    const dir = await project({
      '.kluctl.yaml': kluctl,
      'deployment.yaml': 'vars:\n  - file: ../secret.yml\ndeployments:\n  - path: app\n',
      'app/cm.yaml': configMap('{{ marker }}'),
    });
    expectRefused(await render(dir), /vars file: '\.\.\/secret\.yml' is outside the project/);
  });

  it('refuses a vars file that is a symlink to a file outside, naming the link and its target', async () => {
    const dir = await project(
      {
        '.kluctl.yaml': kluctl,
        'deployment.yaml': 'vars:\n  - file: vars.yml\ndeployments:\n  - path: app\n',
        'app/cm.yaml': configMap('{{ marker }}'),
      },
      { 'vars.yml': '../secret.yml' },
    );
    expectRefused(await render(dir), /'vars\.yml' leads outside the project through the symlink 'vars\.yml' -> '\.\.\/secret\.yml'/);
  });

  it('refuses an item folder that is a symlink to a folder outside', async () => {
    const dir = await project({ '.kluctl.yaml': kluctl, 'deployment.yaml': 'deployments:\n  - path: app\n' }, { app: '../outside' });
    expectRefused(await render(dir), /'app' leads outside the project through the symlink 'app' -> '\.\.\/outside'/);
  });

  it('keeps symlinks that stay inside the project working', async () => {
    const dir = await project(
      {
        '.kluctl.yaml': kluctl,
        'deployment.yaml': 'vars:\n  - file: alias.yml\ndeployments:\n  - path: app\n',
        'vars/real.yml': 'inside: from-the-linked-file\n',
        'real-app/cm.yaml': configMap('{{ inside }}'),
      },
      { 'alias.yml': 'vars/real.yml', app: 'real-app' },
    );
    const run = await render(dir);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('key: from-the-linked-file');
  });

  it("keeps the cluster's kubeconfig out of reach of a kustomization's '../'", async () => {
    // The rendered copy of 'app' sits at <work>/rendered/project/app; the kubeconfig was written to <work>/kubeconfig.
    const dir = await project({
      '.kluctl.yaml': kluctl,
      'deployment.yaml': 'deployments:\n  - path: app\n',
      'app/kustomization.yaml': 'configMapGenerator:\n  - name: kc\n    namespace: default\n    files:\n      - kc=../../../kubeconfig\n',
    });
    const run = await gantry(['render', '-t', 't', '--project-dir', dir, '--context', await localContext()]);
    expect(run.stdout + run.stderr).not.toMatch(/client-key-data|client-certificate-data|token:/);
    expect(run.code).not.toBe(0);
  });

  it("refuses a configMapGenerator reading a file outside through '../', naming the kustomization, the field and the path", async () => {
    // Enough '../' to climb from the rendered copy (<tmp>/gantry-render-…/rendered/project/app) to '/', then down to the file.
    const dir = await project({ '.kluctl.yaml': kluctl, 'deployment.yaml': 'deployments:\n  - path: app\n' });
    const source = `k=${'../'.repeat(30)}${path.resolve(dir, '../secret.yml').slice(1)}`;
    await mkdir(path.join(dir, 'app'));
    await writeFile(path.join(dir, 'app/kustomization.yaml'), generating(source));
    expectRefused(
      await render(dir),
      /app\/kustomization\.yaml: configMapGenerator\[0\]\.files\[0\]: '(\.\.\/){30}.*secret\.yml' is outside the project/,
    );
  });

  it('refuses a configMapGenerator reading a file outside through a symlink, naming the link and its target', async () => {
    const dir = await project(
      { '.kluctl.yaml': kluctl, 'deployment.yaml': 'deployments:\n  - path: app\n', 'app/kustomization.yaml': generating('k=secret.yml') },
      { 'app/secret.yml': '../../secret.yml' },
    );
    expectRefused(
      await render(dir),
      /'app\/secret\.yml' leads outside the project through the symlink 'app\/secret\.yml' -> '\.\.\/\.\.\/secret\.yml'/,
    );
  });

  it('refuses a symlink leading outside from a folder copied as it is (a chart folder), naming the link', async () => {
    const dir = await project(
      {
        '.kluctl.yaml': kluctl,
        'deployment.yaml': 'deployments:\n  - path: app\n',
        'app/kustomization.yaml': generating('k=files/secret.yml'),
        'app/files/Chart.yaml': 'apiVersion: v2\nname: files\nversion: 0.1.0\n',
      },
      { 'app/files/secret.yml': '../../../secret.yml' },
    );
    expectRefused(
      await render(dir),
      /app: local chart 'files': the symlink 'secret\.yml' -> '\.\.\/\.\.\/\.\.\/secret\.yml' leads outside the project/,
    );
  });

  it('refuses a chart folder whose symlinks lead back into it, naming the link, instead of copying for ever', async () => {
    const chart = {
      '.kluctl.yaml': kluctl,
      'deployment.yaml': 'deployments:\n  - path: app\n',
      'app/files/Chart.yaml': 'apiVersion: v2\nname: files\nversion: 0.1.0\n',
    };
    const up = await render(await project(chart, { 'app/files/up': '..' }));
    expect(up.code).not.toBe(0);
    expect(up.stderr).toMatch(/app: local chart 'files': the symlink 'up' -> '\.\.' leads back into a folder holding it/);
    const crossed = await render(await project(chart, { 'app/files/a/to-b': '../b', 'app/files/b/to-a': '../a' }));
    expect(crossed.code).not.toBe(0);
    expect(crossed.stderr).toMatch(/the symlink 'a\/to-b\/to-a' -> '\.\.\/a' leads back into a folder holding it/);
  });

  it("renders a kustomization naming '../common' and a symlink that stay inside the project", async () => {
    const dir = await project(
      {
        '.kluctl.yaml': kluctl,
        'deployment.yaml': 'deployments:\n  - path: common\n    onlyRender: true\n  - path: app\n',
        'common/kustomization.yaml': 'resources:\n  - cm.yaml\n',
        'common/cm.yaml': configMap('from-common'),
        'common/other.yaml': configMap('through-the-link', 'other'),
        'app/kustomization.yaml': 'resources:\n  - ../common\n  - linked.yaml\n',
      },
      { 'app/linked.yaml': '../common/other.yaml' },
    );
    const run = await render(dir);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('key: from-common');
    expect(run.stdout).toContain('key: through-the-link');
  });
});
