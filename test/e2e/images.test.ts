/**
 * images.get_image with fixed images from -F, --fixed-images-file, the target and the `images` var; list-images;
 * poke-images changing nothing but the images.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseYaml, parseYamlDocuments } from '../../src/yaml.ts';
import { removeCopy, writeProject } from '../support/fixtures.ts';
import { gantry, gantryJson, kubectl, kubectlJson, localContext, names } from '../support/cli.ts';

const NS = 'gantry-e2e-images';
let dir = '';
let args: string[] = [];

beforeAll(async () => {
  dir = await writeProject({
    '.kluctl.yaml':
      'discriminator: gantry-e2e-images\ntargets:\n  - name: t\n    images:\n      - image: example.com/web\n        resultImage: example.com/web:from-target\n',
    'deployment.yaml': `deployments:\n  - path: ns\n  - barrier: true\n  - path: app\noverrideNamespace: ${NS}\nvars:\n  - values:\n      images:\n        - image: example.com/sidecar\n          resultImage: example.com/sidecar:from-vars\n`,
    'ns/namespace.yaml': `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${NS}\n`,
    'app/deploy.yaml': [
      'apiVersion: apps/v1',
      'kind: Deployment',
      'metadata:',
      '  name: web',
      '  labels: {keep: me}',
      'spec:',
      '  selector: {matchLabels: {app: web}}',
      '  template:',
      '    metadata: {labels: {app: web}}',
      '    spec:',
      '      containers:',
      '        - name: web',
      `          image: "{{ images.get_image('example.com/web') }}"`,
      '        - name: sidecar',
      `          image: "{{ images.get_image('example.com/sidecar') }}"`,
      '',
    ].join('\n'),
    'fixed.yaml': 'images:\n  - image: example.com/web\n    resultImage: example.com/web:from-file\n',
  });
  args = ['-t', 't', '--project-dir', dir, '--context', await localContext()];
});
afterAll(async () => {
  await gantryJson(['delete', '-y', ...args]);
  await removeCopy(dir);
});

async function containerImages(renderArgs: string[]): Promise<string[]> {
  const run = await gantry(['render', '--offline-kubernetes', '-t', 't', '--project-dir', dir, ...renderArgs]);
  if (run.code !== 0) throw new Error(run.stderr);
  const deployment = (parseYamlDocuments(run.stdout, 'render') as Array<Record<string, any>>).find(
    (object) => object.kind === 'Deployment',
  );
  return deployment?.spec.template.spec.containers.map((container: { image: string }) => container.image);
}

describe('fixed images', { timeout: 300_000 }, () => {
  it('resolve from the target and the images var, with the file and -F taking precedence', async () => {
    expect(await containerImages([])).toEqual(['example.com/web:from-target', 'example.com/sidecar:from-vars']);
    expect(await containerImages(['--fixed-images-file', path.join(dir, 'fixed.yaml')])).toEqual([
      'example.com/web:from-file',
      'example.com/sidecar:from-vars',
    ]);
    expect(
      await containerImages(['--fixed-images-file', path.join(dir, 'fixed.yaml'), '-F', 'example.com/web=example.com/web:from-flag']),
    ).toEqual(['example.com/web:from-flag', 'example.com/sidecar:from-vars']);
    expect(await containerImages(['-F', `example.com/web:${NS}:Deployment/web:web=example.com/web:exact`])).toEqual([
      'example.com/web:exact',
      'example.com/sidecar:from-vars',
    ]);
    expect(await containerImages(['-F', 'example.com/web:other-namespace=example.com/web:elsewhere'])).toEqual([
      'example.com/web:from-target',
      'example.com/sidecar:from-vars',
    ]);
  });

  it('name the object when no fixed image matches, and apply nothing', async () => {
    await writeFile(
      path.join(dir, 'app/extra.yaml'),
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  image: "{{ images.get_image('example.com/unknown') }}"\n`,
    );
    const { code, result } = await gantryJson(['deploy', ...args]);
    expect(code).toBe(1);
    expect(result.errors.map((error) => error.message)).toEqual([
      `app: ${NS}/ConfigMap/extra: no fixed image for example.com/unknown (pass one with -F example.com/unknown=<image>)`,
    ]);
    expect(result.newObjects).toEqual([]);
    await writeFile(path.join(dir, 'app/extra.yaml'), '');
  });

  it('list-images prints what was resolved, in the fixed-images file format', async () => {
    const run = await gantry(['list-images', '--offline-kubernetes', '-t', 't', '--project-dir', dir]);
    expect(run.code, run.stderr).toBe(0);
    const listed = parseYaml(run.stdout, 'list-images') as { images: Array<Record<string, unknown>> };
    expect(listed.images).toEqual([
      expect.objectContaining({
        image: 'example.com/web',
        resultImage: 'example.com/web:from-target',
        container: 'web',
        deployment: 'Deployment/web',
        namespace: NS,
      }),
      expect.objectContaining({ image: 'example.com/sidecar', resultImage: 'example.com/sidecar:from-vars', container: 'sidecar' }),
    ]);
    const simple = await gantry(['list-images', '--offline-kubernetes', '--simple', '-o', 'json', '-t', 't', '--project-dir', dir]);
    expect(JSON.parse(simple.stdout).images[0]).toEqual({ image: 'example.com/web', resultImage: 'example.com/web:from-target' });
  });

  it('poke-images changes the images of the deployed object and nothing else', async () => {
    expect((await gantryJson(['deploy', ...args])).result.errors).toEqual([]);
    await kubectl(['label', 'deployment', 'web', '-n', NS, 'touched-by=someone-else']);
    const { code, result } = await gantryJson(['poke-images', ...args, '-F', 'example.com/web=example.com/web:poked']);
    expect(result.errors).toEqual([]);
    expect(code).toBe(0);
    expect(names(result.changedObjects)).toEqual([`${NS}/Deployment/web`]);
    const changed = (result.changedObjects[0]?.diff ?? '').split('\n').filter((line) => /^[+-][^+-]/.test(line));
    expect(changed).toEqual(['-        - image: example.com/web:from-target', '+        - image: example.com/web:poked']);
    const live = await kubectlJson<Record<string, any>>(['get', 'deployment', 'web', '-n', NS]);
    expect(live.metadata.labels['touched-by']).toBe('someone-else');
  });
});
