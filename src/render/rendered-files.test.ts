import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RenderedFiles } from './rendered-files.ts';

describe('RenderedFiles', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'gantry-rendered-files-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('reads, finds and lists files held in memory together with those on disk, memory first', async () => {
    const files = new RenderedFiles();
    await mkdir(path.join(dir, 'item/copied'), { recursive: true });
    await writeFile(path.join(dir, 'item/copied/chart.tgz'), 'on disk');
    await writeFile(path.join(dir, 'item/cm.yaml'), 'on disk');
    files.set(path.join(dir, 'item/cm.yaml'), 'in memory');
    files.set(path.join(dir, 'item/kustomization.yaml'), 'resources: []');
    files.set(path.join(dir, 'item/sub/deep.yaml'), 'deep');

    expect(await files.read(path.join(dir, 'item/cm.yaml'))).toBe('in memory');
    expect(await files.read(path.join(dir, 'item/copied/chart.tgz'))).toBe('on disk');
    expect(await files.read(path.join(dir, 'item/missing.yaml'))).toBeUndefined();
    expect(await files.read(path.join(dir, 'item/copied'))).toBeUndefined();
    expect(await files.find(path.join(dir, 'item'), 'kustomization')).toBe(path.join(dir, 'item/kustomization.yaml'));
    expect(await files.find(path.join(dir, 'item'), 'helm-chart')).toBeUndefined();
    expect(await files.list(path.join(dir, 'item'), false)).toEqual(['cm.yaml', 'kustomization.yaml']);
    expect(await files.list(path.join(dir, 'item'), true)).toEqual(['cm.yaml', 'copied/chart.tgz', 'kustomization.yaml', 'sub/deep.yaml']);
    expect(await files.list(path.join(dir, 'nowhere'), true)).toEqual([]);
  });

  it('writes the files under a folder once, leaves the others in memory, and reads a file a program replaced from disk', async () => {
    const files = new RenderedFiles();
    files.set(path.join(dir, 'a/sub/one.yaml'), 'one');
    files.set(path.join(dir, 'b/two.yaml'), 'two');
    await Promise.all([files.write(path.join(dir, 'a')), files.write(path.join(dir, 'a'))]);
    expect(await readFile(path.join(dir, 'a/sub/one.yaml'), 'utf8')).toBe('one');
    await expect(readFile(path.join(dir, 'b/two.yaml'), 'utf8')).rejects.toThrow(/ENOENT/);

    await writeFile(path.join(dir, 'a/sub/one.yaml'), 'helm output');
    files.fromDisk(path.join(dir, 'a/sub/one.yaml'));
    await files.write();
    expect(await files.read(path.join(dir, 'a/sub/one.yaml'))).toBe('helm output');
    expect(await readFile(path.join(dir, 'a/sub/one.yaml'), 'utf8')).toBe('helm output');
    expect(await readFile(path.join(dir, 'b/two.yaml'), 'utf8')).toBe('two');
  });
  it("hands a program's parsed output to the first reader of its documents, and parses the file for any later one", async () => {
    const files = new RenderedFiles();
    const output = path.join(dir, 'item/deploy.yml');
    await mkdir(path.dirname(output), { recursive: true });
    await writeFile(output, 'kind: ConfigMap\n---\nkind: Secret\n');
    const parsed = [{ kind: 'ConfigMap' }, { kind: 'Secret' }];
    files.fromDisk(output, parsed);
    expect(await files.readDocuments(output)).toBe(parsed);
    expect(await files.readDocuments(output)).not.toBe(parsed);
    expect(await files.readDocuments(output)).toEqual(parsed);
    files.set(path.join(dir, 'item/cm.yaml'), 'a: [1');
    await expect(files.readDocuments(path.join(dir, 'item/cm.yaml'))).rejects.toThrow(/cm\.yaml/);
    expect(await files.readDocuments(path.join(dir, 'item/missing.yaml'))).toBeUndefined();
  });
});
