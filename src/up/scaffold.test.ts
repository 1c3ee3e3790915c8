import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { scaffold } from './scaffold.ts';

describe('scaffold', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-scaffold-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  test('creates, then leaves alone what is unchanged', async () => {
    expect(await scaffold(dir, { 'a/b.yaml': 'one\n' })).toEqual({ created: ['a/b.yaml'], upgraded: [], kept: [], unchanged: [] });
    expect(await scaffold(dir, { 'a/b.yaml': 'one\n' })).toEqual({ created: [], upgraded: [], kept: [], unchanged: ['a/b.yaml'] });
  });

  test('upgrades a file nobody edited, keeps one the user edited', async () => {
    await scaffold(dir, { 'plain.yaml': 'v1\n', 'edited.yaml': 'v1\n' });
    await writeFile(path.join(dir, 'edited.yaml'), 'mine\n');
    const result = await scaffold(dir, { 'plain.yaml': 'v2\n', 'edited.yaml': 'v2\n' });
    expect(result).toEqual({ created: [], upgraded: ['plain.yaml'], kept: ['edited.yaml'], unchanged: [] });
    expect(await readFile(path.join(dir, 'plain.yaml'), 'utf8')).toBe('v2\n');
    expect(await readFile(path.join(dir, 'edited.yaml'), 'utf8')).toBe('mine\n');
    // Still kept on the next run: the record holds what Gantry wrote, not what the user made of it.
    expect((await scaffold(dir, { 'edited.yaml': 'v2\n' })).kept).toEqual(['edited.yaml']);
  });

  test('a file that was there before the first run is the user’s: kept', async () => {
    await writeFile(path.join(dir, 'README.md'), 'ours\n');
    expect((await scaffold(dir, { 'README.md': 'generated\n' })).kept).toEqual(['README.md']);
  });

  test('a corrupt record is an error naming it', async () => {
    await scaffold(dir, { 'x.yaml': 'x\n' });
    await writeFile(path.join(dir, '.gantry/up.json'), '{');
    await expect(scaffold(dir, { 'x.yaml': 'x\n' })).rejects.toThrow(`${path.join(dir, '.gantry/up.json')}: not JSON`);
  });
});
