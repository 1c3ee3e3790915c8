import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PathEscapeError } from '../files.ts';
import type { Values } from '../values.ts';
import { assertKustomizationInside, namedPaths } from './kustomize-paths.ts';
import { RenderedFiles } from './rendered-files.ts';

/** `<top>/project` (the root, with app/ and common/) beside `<top>/outside/secret.txt`. */
let top: string;
let root: string;
beforeAll(async () => {
  top = await mkdtemp(path.join(os.tmpdir(), 'gantry-kustomize-paths-'));
  root = path.join(top, 'project');
  await mkdir(path.join(root, 'app'), { recursive: true });
  await mkdir(path.join(root, 'common'), { recursive: true });
  await mkdir(path.join(top, 'outside'));
  await writeFile(path.join(top, 'outside/secret.txt'), 'secret');
  await writeFile(path.join(root, 'common/cm.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n');
  await symlink('../../outside', path.join(root, 'app/out'));
  await symlink('../common', path.join(root, 'app/shared'));
});
afterAll(async () => rm(top, { recursive: true, force: true }));

/** Checks `kustomization` as app/kustomization.yaml (after writing `files` under the project). */
async function check(kustomization: Values, files: Record<string, string> = {}): Promise<void> {
  for (const [name, content] of Object.entries(files)) await writeFile(path.join(root, name), content);
  const app = path.join(root, 'app');
  await assertKustomizationInside(
    app,
    kustomization,
    path.join(app, 'kustomization.yaml'),
    { dir: root, name: 'the project' },
    new RenderedFiles(),
  );
}

describe('paths a kustomization names', () => {
  it("refuses a '../' leading out of the root, naming the file, the field and the path", async () => {
    const refused = check({ resources: ['cm.yaml', '../../outside/secret.txt'] });
    await expect(refused).rejects.toThrow(PathEscapeError);
    await expect(refused).rejects.toThrow("app/kustomization.yaml: resources[1]: '../../outside/secret.txt' is outside the project");
  });

  it('refuses a path through a symlinked folder leading out, naming the link and where it points', async () => {
    await expect(check({ configMapGenerator: [{ name: 'g', envs: ['out/secret.txt'] }] })).rejects.toThrow(
      "app/kustomization.yaml: configMapGenerator[0].envs[0]: 'out/secret.txt' leads outside the project through the symlink 'app/out' -> '../../outside'",
    );
  });

  it("refuses a generator's 'key=' file source", async () => {
    await expect(check({ secretGenerator: [{ name: 'g', files: ['ok=cm.yaml', 'kc=../../../kubeconfig'] }] })).rejects.toThrow(
      "secretGenerator[0].files[1]: '../../../kubeconfig' is outside the project",
    );
  });

  it('refuses an absolute path', async () => {
    await expect(check({ configMapGenerator: [{ name: 'g', env: '/etc/passwd' }] })).rejects.toThrow(
      "configMapGenerator[0].env: '/etc/passwd' is outside the project",
    );
  });

  it("allows '../common' inside the root, and refuses a path out of the kustomization it reaches", async () => {
    await expect(
      check({ resources: ['../common', 'shared/cm.yaml'] }, { 'common/kustomization.yaml': 'resources: [cm.yaml]\n' }),
    ).resolves.toBeUndefined();
    const reached = { 'common/kustomization.yaml': 'resources: [cm.yaml]\npatches:\n  - path: ../../outside/secret.txt\n' };
    await expect(check({ bases: ['../common'] }, reached)).rejects.toThrow(
      "common/kustomization.yaml: patches[0].path: '../../outside/secret.txt' is outside the project",
    );
  });

  it('leaves remote references, inline patches and missing files alone, but checks file:// paths', async () => {
    const remote = [
      'https://github.com/org/repo//base?ref=v1',
      'ssh://git@github.com/org/repo',
      'git@github.com:org/repo.git',
      'github.com/org/repo/base',
    ];
    const inline = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ../../../x\n';
    await expect(check({ resources: [...remote, 'missing.yaml'], patchesStrategicMerge: [inline] })).resolves.toBeUndefined();
    await expect(check({ components: ['file:///etc//sub?ref=main'] })).rejects.toThrow("components[0]: '/etc' is outside the project");
  });

  it('finds the paths of every field of the kustomization reference that names one', () => {
    const fields = namedPaths({
      resources: ['a'],
      bases: ['b'],
      components: ['c'],
      crds: ['d'],
      configurations: ['e'],
      generators: ['f'],
      transformers: ['g'],
      validators: ['h'],
      openapi: { path: 'i' },
      patchesStrategicMerge: ['j'],
      patchesJson6902: [{ path: 'k' }],
      patches: [{ patch: 'inline: true' }, { path: 'l' }],
      replacements: [{ path: 'm' }],
      configMapGenerator: [{ files: ['n', 'key=o'], envs: ['p'], env: 'q' }],
      secretGenerator: [{ files: ['r'] }],
      helmGlobals: { chartHome: 's', configHome: 't' },
      helmCharts: [{ valuesFile: 'u', additionalValuesFiles: ['v'] }],
      helmChartInflationGenerator: [{ chartHome: 'w', values: 'x' }],
    }).map(({ field, name }) => `${field}=${name}`);
    expect(fields).toEqual([
      'resources[0]=a',
      'bases[0]=b',
      'components[0]=c',
      'generators[0]=f',
      'transformers[0]=g',
      'validators[0]=h',
      'crds[0]=d',
      'configurations[0]=e',
      'patchesStrategicMerge[0]=j',
      'patchesJson6902[0].path=k',
      'patches[1].path=l',
      'replacements[0].path=m',
      'configMapGenerator[0].files[0]=n',
      'configMapGenerator[0].files[1]=o',
      'configMapGenerator[0].envs[0]=p',
      'configMapGenerator[0].env=q',
      'secretGenerator[0].files[0]=r',
      'openapi.path=i',
      'helmGlobals.chartHome=s',
      'helmGlobals.configHome=t',
      'helmCharts[0].valuesFile=u',
      'helmCharts[0].additionalValuesFiles[0]=v',
      'helmChartInflationGenerator[0].chartHome=w',
      'helmChartInflationGenerator[0].values=x',
    ]);
  });
});
