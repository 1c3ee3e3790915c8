/** The worker pool: batching, ordering, concurrency, crash recovery, shutdown and the Python check. */
import { chmod, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig, testRenderer, testTools } from '../../test/support/engine.ts';
import type { JinjaPool } from './jinja-pool.ts';
import { makeProject, workerPids } from './test-support.ts';

let project: { root: string; remove: () => Promise<void> };
const fileCount = 30;
const fileNames = Array.from({ length: fileCount }, (_, index) => `f${String(index).padStart(2, '0')}.yml`);

beforeAll(async () => {
  project = await makeProject(Object.fromEntries(fileNames.map((name, index) => [name, `{{ n }}-${index}`])));
});

afterAll(async () => {
  await project?.remove();
});

describe('with two workers', () => {
  let pool: JinjaPool;

  beforeAll(() => {
    pool = testRenderer({ workers: 2 });
  });

  afterAll(async () => {
    await pool?.close();
  });

  it('returns results in request order for a batch split over the workers', async () => {
    const files = [...fileNames].reverse();
    const rendered = await pool.renderFiles({ rootDir: project.root, files, context: { n: 7 } });
    expect(rendered).toEqual(files.map((path) => ({ path, text: `7-${Number(path.slice(1, 3))}` })));
    expect((await workerPids()).length).toBe(2);
  });

  it('keeps many concurrent batches apart, with no more processes than workers', async () => {
    const batches = await Promise.all(
      Array.from({ length: 25 }, (_, n) => pool.renderFiles({ rootDir: project.root, files: fileNames.slice(n, n + 5), context: { n } })),
    );
    batches.forEach((rendered, n) => {
      expect(rendered).toEqual(fileNames.slice(n, n + 5).map((path, offset) => ({ path, text: `${n}-${n + offset}` })));
    });
    expect((await workerPids()).length).toBe(2);
  });
});

it('rejects the request of a killed worker with its stderr tail, then renders with a fresh worker', async () => {
  const stderr: string[] = [];
  const pool = testRenderer({ workers: 1, onStderr: (line) => stderr.push(line) });
  const busy = pool.renderString({
    rootDir: project.root,
    dir: '.',
    name: 'slow',
    source: '{{ debug_print("about to loop") }}{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}',
    context: {},
  });
  // A worker's start takes Python's import of Jinja2: seconds on a loaded machine, which poll's default 1 s missed.
  await expect.poll(() => stderr, { timeout: 30_000 }).toContain('debug_print: about to loop');
  const [victim] = await workerPids();
  if (victim === undefined) throw new Error('no worker process found');
  process.kill(victim, 'SIGKILL');
  await expect(busy).rejects.toThrow(
    /^Jinja2 worker \(pid \d+\) was killed by SIGKILL while rendering; its stderr ended with:\ndebug_print: about to loop$/,
  );

  const rendered = await pool.renderFiles({ rootDir: project.root, files: fileNames, context: { n: 1 } });
  expect(rendered.every((file) => 'text' in file)).toBe(true);
  const after = await workerPids();
  expect(after).toHaveLength(1);
  expect(after).not.toContain(victim);
  await pool.close();
});

it('close() leaves no worker process behind', async () => {
  const pool = testRenderer({ workers: 3 });
  await pool.renderFiles({ rootDir: project.root, files: fileNames, context: { n: 0 } });
  const started = await workerPids();
  expect(started.length).toBe(3);
  await pool.close();
  expect(await workerPids()).toEqual([]);
  await expect(pool.renderFiles({ rootDir: project.root, files: fileNames, context: { n: 0 } })).rejects.toThrow('JinjaPool is closed');
});

it('release() lets the idle workers exit, the next render starts new ones, and close() waits for every exit', async () => {
  const pool = testRenderer({ workers: 2 });
  await pool.renderFiles({ rootDir: project.root, files: fileNames, context: { n: 0 } });
  const first = await workerPids();
  expect(first).toHaveLength(2);
  pool.release();
  await expect.poll(workerPids, { timeout: 30_000 }).toEqual([]);
  const rendered = await pool.renderFiles({ rootDir: project.root, files: fileNames, context: { n: 2 } });
  expect(rendered[0]).toEqual({ path: fileNames[0], text: '2-0' });
  const second = await workerPids();
  expect(second).toHaveLength(2);
  expect(second.some((pid) => first.includes(pid))).toBe(false);
  pool.release();
  await pool.close();
  expect(await workerPids()).toEqual([]);
});

it('with idleMs, the workers exit once nothing was rendered that long, and not while renders keep coming', async () => {
  const pool = testRenderer({ workers: 2, idleMs: 1_000 });
  try {
    const render = (n: number) => pool.renderFiles({ rootDir: project.root, files: fileNames, context: { n } });
    await render(0);
    const first = await workerPids();
    expect(first).toHaveLength(2);
    // One render after another, for longer than the idle time in all: the same workers serve them all.
    const started = performance.now();
    for (let round = 1; performance.now() - started < 1_500; round++) await render(round);
    expect(await workerPids()).toEqual(first);
    await expect.poll(workerPids, { timeout: 5_000 }).toEqual([]);
    expect((await render(9))[0]).toEqual({ path: fileNames[0], text: '9-0' });
    expect(await workerPids()).toHaveLength(2);
  } finally {
    await pool.close();
  }
});

describe('a Python that cannot render', () => {
  it('gives one error saying what to install when Python is missing', async () => {
    const pool = testRenderer({ tools: testTools(testConfig({ tools: { ...testConfig().tools, python: '/nonexistent/python3' } })) });
    const request = { rootDir: project.root, dir: '.', name: 't', source: '{{ 1 }}', context: {} };
    const expected = /^\/nonexistent\/python3 not found: install Python 3\.11\+ and `pip install -r \S+requirements\.txt`/;
    await expect(pool.renderString(request)).rejects.toThrow(expected);
    await expect(pool.renderString(request)).rejects.toThrow(expected);
    await pool.close();
  });

  it('names the missing package and the pip command when jinja2 is not importable', async () => {
    // python3 -S skips site-packages, so neither jinja2 nor PyYAML is found.
    const python = join(project.root, 'python-without-packages');
    await writeFile(python, '#!/bin/sh\nexec python3 -S "$@"\n');
    await chmod(python, 0o755);
    const pool = testRenderer({ tools: testTools(testConfig({ tools: { ...testConfig().tools, python } })) });
    await expect(pool.renderFiles({ rootDir: project.root, files: fileNames, context: { n: 0 } })).rejects.toThrow(
      /jinja2 missing \(needs 3\.1\.6\), .*PyYAML missing \(needs 6\.0\.3\), python-slugify missing .*: run `\S+ -m pip install -r \S+requirements\.txt`/,
    );
    await pool.close();
    expect(await workerPids()).toEqual([]);
  });
});

describe('with a code cache folder', () => {
  let cacheDir: string;
  beforeAll(async () => {
    cacheDir = await mkdtemp(join(tmpdir(), 'gantry-jinja-code-'));
  });
  afterAll(async () => {
    await rm(cacheDir, { recursive: true, force: true });
  });

  /** Renders `files` of `root` with a fresh pool (new worker processes) keeping code in the cache folder. */
  async function renderFresh(root: string, files: string[], context: Record<string, unknown>) {
    const pool = testRenderer({ workers: 1, codeCacheDir: cacheDir });
    try {
      return await pool.renderFiles({ rootDir: root, files, context });
    } finally {
      await pool.close();
    }
  }

  it('keeps compiled code for later processes, and never serves code of a changed or damaged file', async () => {
    const changing = await makeProject({ 'a.yml': '{{ n }} first', 'b.yml': '{{ n }} other' });
    try {
      expect(await renderFresh(changing.root, ['a.yml', 'b.yml'], { n: 1 })).toEqual([
        { path: 'a.yml', text: '1 first' },
        { path: 'b.yml', text: '1 other' },
      ]);
      const [folder] = await readdir(cacheDir);
      const cached = await readdir(join(cacheDir, folder!));
      expect(cached).toHaveLength(2);

      await writeFile(join(changing.root, 'a.yml'), '{{ n }} second');
      for (const file of cached) await writeFile(join(cacheDir, folder!, file), 'not compiled code');
      expect(await renderFresh(changing.root, ['a.yml', 'b.yml'], { n: 2 })).toEqual([
        { path: 'a.yml', text: '2 second' },
        { path: 'b.yml', text: '2 other' },
      ]);
    } finally {
      await changing.remove();
    }
  });
});
