import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { projectFilesDigest } from './project-files.ts';

describe('projectFilesDigest', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'gantry-project-files-'));
    await mkdir(path.join(dir, 'app'));
    await writeFile(path.join(dir, 'app/cm.yaml'), 'kind: ConfigMap\n');
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it("changes with a file's content, name or a new file, and not with .git", async () => {
    const { digest, notReusable } = await projectFilesDigest(dir);
    expect(notReusable).toEqual([]);
    await mkdir(path.join(dir, '.git'));
    await writeFile(path.join(dir, '.git/HEAD'), 'ref: refs/heads/main\n');
    expect((await projectFilesDigest(dir)).digest).toBe(digest);
    await writeFile(path.join(dir, 'app/cm.yaml'), 'kind: Secret\n');
    const edited = (await projectFilesDigest(dir)).digest;
    expect(edited).not.toBe(digest);
    await writeFile(path.join(dir, 'app/other.yaml'), '');
    expect((await projectFilesDigest(dir)).digest).not.toBe(edited);
  });

  it('says why sops files, templates reading the clock or chance, and linked folders forbid reuse', async () => {
    await writeFile(path.join(dir, 'app/secret.yaml'), 'data:\n  a: ENC[AES256_GCM,data:abc,type:str]\nsops:\n  mac: x\n');
    await writeFile(path.join(dir, 'app/now.yaml'), 'at: "{{ time.now() }}"\n');
    await writeFile(path.join(dir, 'app/pick.yaml'), 'one: "{{ [1, 2] | random }}"\n');
    await symlink(os.tmpdir(), path.join(dir, 'elsewhere'));
    expect((await projectFilesDigest(dir)).notReusable.sort()).toEqual([
      'app/now.yaml reads the clock or chance',
      'app/pick.yaml reads the clock or chance',
      'app/secret.yaml is encrypted with sops',
      'elsewhere is a link to a folder',
    ]);
  });

  it("leaves Helm charts' own templates to the render's reads", async () => {
    await mkdir(path.join(dir, '.helm-charts/repo/chart/templates'), { recursive: true });
    await writeFile(path.join(dir, '.helm-charts/repo/chart/templates/a.yaml'), 'at: {{ now() }}\n');
    expect((await projectFilesDigest(dir)).notReusable).toEqual([]);
  });
});
