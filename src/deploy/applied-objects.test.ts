import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/object.ts';
import { AppliedObjects, appliedObjectsFile } from './applied-objects.ts';

const manifest: KubeObject = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'shop', labels: { app: 'web' } },
  spec: { replicas: 2, template: { spec: { containers: [{ name: 'web', image: 'web:1', args: ['--port', '80'] }] } } },
};

/** The API server's answer: the manifest plus what the server adds. */
function answerTo(object: KubeObject, uid = 'uid-1'): KubeObject {
  const copy = structuredClone(object) as KubeObject & { spec: any };
  copy.metadata = { ...copy.metadata, uid, resourceVersion: '10', generation: 1, managedFields: [{ manager: 'gantry' }] };
  copy.spec.template.spec.containers[0].imagePullPolicy = 'IfNotPresent';
  return copy;
}

function edited(object: KubeObject, edit: (copy: any) => void): KubeObject {
  const copy = structuredClone(object);
  edit(copy);
  return copy;
}

describe('AppliedObjects', () => {
  const scratch = mkdtemp(path.join(os.tmpdir(), 'gantry-applied-'));
  afterAll(async () => rm(await scratch, { recursive: true, force: true }));

  function recorded(): AppliedObjects {
    const applied = new AppliedObjects();
    applied.record(manifest, answerTo(manifest), 'gantry');
    return applied;
  }

  it('finds an object unchanged when neither the manifest nor the fields it sets changed', () => {
    expect(recorded().unchanged(manifest, answerTo(manifest), 'gantry')).toBe(true);
  });

  it('ignores what others add beside the manifest: status, annotations, resourceVersion, managedFields', () => {
    const live = edited(answerTo(manifest), (copy) => {
      copy.status = { readyReplicas: 2 };
      copy.metadata.annotations = { 'deployment.kubernetes.io/revision': '1' };
      copy.metadata.resourceVersion = '42';
      copy.metadata.managedFields.push({ manager: 'kube-controller-manager' });
    });
    expect(recorded().unchanged(manifest, live, 'gantry')).toBe(true);
  });

  it('applies again when anyone changed or removed a field the manifest sets', () => {
    const applied = recorded();
    const changed = edited(answerTo(manifest), (copy) => (copy.spec.replicas = 5));
    const removed = edited(answerTo(manifest), (copy) => delete copy.metadata.labels.app);
    const listGrew = edited(answerTo(manifest), (copy) => copy.spec.template.spec.containers[0].args.push('--debug'));
    const itemAdded = edited(answerTo(manifest), (copy) => copy.spec.template.spec.containers.push({ name: 'sidecar', image: 's' }));
    for (const live of [changed, removed, listGrew, itemAdded]) expect(applied.unchanged(manifest, live, 'gantry')).toBe(false);
  });

  it('applies again when the manifest, the field manager or the object (uid) differs', () => {
    const applied = recorded();
    const newImage = edited(manifest, (copy) => (copy.spec.template.spec.containers[0].image = 'web:2'));
    expect(applied.unchanged(newImage, answerTo(manifest), 'gantry')).toBe(false);
    expect(applied.unchanged(manifest, answerTo(manifest), 'someone-else')).toBe(false);
    expect(applied.unchanged(manifest, answerTo(manifest, 'uid-2'), 'gantry')).toBe(false);
  });

  it('does not trust a record it was told to forget, and never records Secrets', () => {
    const applied = recorded();
    applied.forget(answerTo(manifest));
    expect(applied.unchanged(manifest, answerTo(manifest), 'gantry')).toBe(false);
    const secret: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', namespace: 'shop', uid: 'uid-3' },
      data: { a: 'YQ==' },
    };
    applied.record(secret, secret, 'gantry');
    expect(applied.unchanged(secret, secret, 'gantry')).toBe(false);
  });

  it('keeps its records in a file only its owner can read, and starts empty from a missing or broken file', async () => {
    const file = appliedObjectsFile(await scratch, 'https://127.0.0.1:6443', 'shop');
    expect(appliedObjectsFile(await scratch, 'https://127.0.0.1:6443', 'other')).not.toBe(file);
    const saved = new AppliedObjects(file);
    saved.record(manifest, answerTo(manifest), 'gantry');
    await saved.save();
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readFile(file, 'utf8')).not.toContain('web:1');
    expect((await AppliedObjects.load(file)).unchanged(manifest, answerTo(manifest), 'gantry')).toBe(true);
    await writeFile(file, '{not json');
    expect((await AppliedObjects.load(file)).unchanged(manifest, answerTo(manifest), 'gantry')).toBe(false);
    expect((await AppliedObjects.load(path.join(await scratch, 'absent.json'))).unchanged(manifest, answerTo(manifest), 'gantry')).toBe(
      false,
    );
  });
});
