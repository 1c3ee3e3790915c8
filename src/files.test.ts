import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isInside, PathEscapeError, resolveInside } from './files.ts';

let dir: string;
let root: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'gantry-files-'));
  root = path.join(dir, 'project');
  await mkdir(path.join(root, 'lib'), { recursive: true });
  await mkdir(path.join(dir, 'outside'));
  await writeFile(path.join(dir, 'secret.yml'), 'marker: outside\n');
  await writeFile(path.join(dir, 'outside', 'secret.txt'), 'marker\n');
  await writeFile(path.join(root, 'lib', 'inner.txt'), 'inner\n');
  await symlink('../outside', path.join(root, 'out'));
  await symlink(path.join(dir, 'secret.yml'), path.join(root, 'secret.yml'));
  await symlink('lib', path.join(root, 'alias'));
  await symlink('/', path.join(root, 'lib', 'host'));
});

afterAll(() => rm(dir, { recursive: true, force: true }));

describe('resolveInside', () => {
  it('resolves files inside the root, through symlinks that stay inside', async () => {
    expect(await resolveInside(root, 'lib/inner.txt')).toBe(path.join(root, 'lib', 'inner.txt'));
    expect(await resolveInside(root, 'alias/inner.txt')).toBe(path.join(root, 'lib', 'inner.txt'));
    expect(await resolveInside(root, 'inner.txt', { base: path.join(root, 'alias') })).toBe(path.join(root, 'lib', 'inner.txt'));
  });

  it('resolves a missing file as far as it exists, leaving the missing part to the caller', async () => {
    expect(await resolveInside(root, 'alias/none/x.yml')).toBe(path.join(root, 'lib', 'none', 'x.yml'));
  });

  it('refuses a path whose text leaves the root, and an absolute path outside it', async () => {
    await expect(resolveInside(root, '../secret.yml', { label: 'deployment.yml: vars[0].file' })).rejects.toThrow(
      /^deployment\.yml: vars\[0\]\.file: '\.\.\/secret\.yml' is outside project$/,
    );
    await expect(resolveInside(root, '/etc/passwd')).rejects.toBeInstanceOf(PathEscapeError);
  });

  it('refuses a path that leaves through a symlink, naming the link and where it points', async () => {
    await expect(resolveInside(root, 'out/secret.txt')).rejects.toThrow(
      "'out/secret.txt' leads outside project through the symlink 'out' -> '../outside'",
    );
    await expect(resolveInside(root, 'secret.yml')).rejects.toThrow(
      `through the symlink 'secret.yml' -> '${path.join(dir, 'secret.yml')}'`,
    );
    await expect(resolveInside(root, 'alias/host/etc/passwd')).rejects.toThrow("through the symlink 'alias/host' -> '/'");
    await expect(resolveInside(root, 'out/missing/deeper.txt')).rejects.toBeInstanceOf(PathEscapeError);
  });

  it('refuses a name holding a NUL character, naming it', async () => {
    await expect(resolveInside(root, 'lib/\0', { label: 'deployment.yml: deployments[0].path' })).rejects.toThrow(
      'deployment.yml: deployments[0].path: "lib/\\u0000" holds a NUL character, which no path may',
    );
  });

  it('resolves a root that is itself reached through a symlink', async () => {
    const linkedRoot = path.join(dir, 'linked');
    await symlink('project', linkedRoot);
    expect(await resolveInside(linkedRoot, 'alias/inner.txt')).toBe(path.join(root, 'lib', 'inner.txt'));
    await expect(resolveInside(linkedRoot, 'out/secret.txt')).rejects.toBeInstanceOf(PathEscapeError);
  });
});

describe('isInside', () => {
  it('tells a name starting with two dots from the parent folder', () => {
    expect(isInside('/a', '/a/..b')).toBe(true);
    expect(isInside('/a', '/a/../b')).toBe(false);
    expect(isInside('/a', '/a')).toBe(true);
  });
});
