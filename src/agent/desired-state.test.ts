import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { AgentService } from '../api/agent.ts';
import { DesiredState } from './desired-state.ts';

const services = (...names: string[]) => names.map((name) => ({ name }) as unknown as AgentService);

describe('the desired state on disk', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-desired-state-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('a rotation seals it again with the new token; the old token no longer opens it', async () => {
    const file = path.join(dir, 'rekey', 'services.sealed');
    const state = new DesiredState(file, 'gantry-deploy-old');
    await state.save(services('a', 'b'));
    await state.rekey('gantry-deploy-new');
    expect((await new DesiredState(file, 'gantry-deploy-new').load())?.map((s) => s.name)).toEqual(['a', 'b']);
    await expect(new DesiredState(file, 'gantry-deploy-old').load()).rejects.toThrow(/cannot be opened with this deploy token/);
  });

  test('saves racing a rotation leave the last list, sealed with the new token, and no partial file', async () => {
    const file = path.join(dir, 'race', 'services.sealed');
    const state = new DesiredState(file, 'gantry-deploy-old');
    await state.save(services('first'));
    await Promise.all([state.save(services('second')), state.rekey('gantry-deploy-new'), state.save(services('third'))]);
    expect((await new DesiredState(file, 'gantry-deploy-new').load())?.map((s) => s.name)).toEqual(['third']);
    expect(await readdir(path.dirname(file))).toEqual(['services.sealed']);
  });

  test('a failed write is tried again by the next save of the same list', async () => {
    const blocked = path.join(dir, 'blocked');
    const state = new DesiredState(path.join(blocked, 'services.sealed'), 'gantry-deploy-token');
    // A file where its folder should be: the write fails.
    await writeFile(blocked, 'not a folder');
    await expect(state.save(services('x'))).rejects.toThrow();
    await rm(blocked);
    await state.save(services('x'));
    expect((await new DesiredState(path.join(blocked, 'services.sealed'), 'gantry-deploy-token').load())?.map((s) => s.name)).toEqual([
      'x',
    ]);
  });
});
