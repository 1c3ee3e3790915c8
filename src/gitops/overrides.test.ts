import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KluctlDeploymentSpec } from '../api/kluctl-deployment.ts';
import { buildOverridesPatch } from './overrides.ts';

const spec: KluctlDeploymentSpec = {
  interval: '5m',
  target: 'prod',
  args: { replicas: 2, nested: { a: 1, b: 2 } },
  includeTags: ['web'],
  images: [{ image: 'nginx', resultImage: 'nginx:1.25' }],
};

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'gantry-gitops-overrides-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('buildOverridesPatch', () => {
  it('gives no patch when no flag overrides anything', async () => {
    expect(await buildOverridesPatch(spec, {})).toBeUndefined();
    expect(await buildOverridesPatch(spec, { args: [], includeTags: [], fixedImages: [] })).toBeUndefined();
  });

  it('sets the flags that were given, false included', async () => {
    expect(
      await buildOverridesPatch(spec, {
        dryRun: true,
        noWait: true,
        prune: false,
        target: 'dev',
        targetNameOverride: 'dev-2',
        context: 'other',
      }),
    ).toEqual({
      dryRun: true,
      noWait: true,
      prune: false,
      target: 'dev',
      targetNameOverride: 'dev-2',
      context: 'other',
    });
  });

  it("adds to the spec's lists rather than replacing them (a merge patch replaces lists whole)", async () => {
    const patch = await buildOverridesPatch(spec, {
      includeTags: ['db'],
      excludeTags: ['slow'],
      fixedImages: ['redis:ns:Deployment/cache=redis:7'],
    });
    expect(patch).toEqual({
      includeTags: ['web', 'db'],
      excludeTags: ['slow'],
      images: [
        { image: 'nginx', resultImage: 'nginx:1.25' },
        { image: 'redis', namespace: 'ns', deployment: 'Deployment/cache', resultImage: 'redis:7' },
      ],
    });
  });

  it('sends args as nested values parsed as YAML, files first and -a over them', async () => {
    const file = path.join(dir, 'args.yaml');
    await writeFile(file, 'nested:\n  b: 20\n  c: 30\nfromFile: yes\n');
    const patch = await buildOverridesPatch(spec, { argsFiles: [file], args: ['nested.c=31', 'replicas=3', 'name="3"'] });
    expect(patch).toEqual({ args: { nested: { b: 20, c: 31 }, fromFile: true, replicas: 3, name: '3' } });
  });

  it('reads fixed images files', async () => {
    const file = path.join(dir, 'images.yaml');
    await writeFile(file, 'images:\n  - image: busybox\n    resultImage: busybox:1.36\n');
    expect(await buildOverridesPatch({ interval: '1m' }, { fixedImagesFiles: [file] })).toEqual({
      images: [{ image: 'busybox', resultImage: 'busybox:1.36' }],
    });
  });

  it('rejects malformed args and images', async () => {
    await expect(buildOverridesPatch(spec, { args: ['novalue'] })).rejects.toThrow(/invalid argument 'novalue'/);
    await expect(buildOverridesPatch(spec, { fixedImages: ['nginx'] })).rejects.toThrow(/invalid --fixed-image 'nginx'/);
  });
});
