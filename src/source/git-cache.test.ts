import { mkdtemp, readFile, readdir, rm, stat, utimes } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRepo, git, type TestRepo } from '../../test/support/git-repo.ts';
import { GitCache } from './git-cache.ts';
import { testTools } from '../../test/support/engine.ts';

const tools = testTools();

let repo: TestRepo;
let root: string;
beforeAll(async () => {
  repo = await createRepo({ 'app/config.yaml': 'version: 1\n' });
  root = await mkdtemp(path.join(os.tmpdir(), 'gantry-git-cache-'));
});
afterAll(async () => {
  await repo.remove();
  await rm(root, { recursive: true, force: true });
});

/** Tags `commit` in the bare remote with an annotated tag (a tag object), moving the tag when it exists. */
async function annotatedTag(remote: TestRepo, name: string, commit: string): Promise<void> {
  const identity = ['-c', 'user.name=Gantry Test', '-c', 'user.email=test@gantry.dev'];
  await git([...identity, 'tag', '--force', '--annotate', '--message', name, name, commit], { cwd: remote.remote });
}

describe('GitCache', () => {
  it('checks out the default branch as plain files', async () => {
    const cache = new GitCache({ root, tools });
    const { dir, commit } = await cache.checkout(repo.url);
    expect(await readFile(path.join(dir, 'app/config.yaml'), 'utf8')).toBe('version: 1\n');
    expect(await readdir(dir)).not.toContain('.git');
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
  });

  it('sees a new commit only after the refresh interval', async () => {
    const lazy = new GitCache({ root, tools, refreshMs: 60_000 });
    const before = await lazy.resolve(repo.url);
    const pushed = await repo.commit({ 'app/config.yaml': 'version: 2\n' });
    expect(await lazy.resolve(repo.url)).toBe(before);
    const eager = new GitCache({ root, tools, refreshMs: 0 });
    expect(await eager.resolve(repo.url)).toBe(pushed);
    expect(await readFile(path.join((await eager.checkout(repo.url)).dir, 'app/config.yaml'), 'utf8')).toBe('version: 2\n');
  });

  it('fetches again at once after expire (a webhook announced a push)', async () => {
    const cache = new GitCache({ root, tools, refreshMs: 60_000 });
    await cache.resolve(repo.url);
    const pushed = await repo.commit({ 'app/config.yaml': 'version: 5\n' });
    cache.expire(repo.url);
    expect(await cache.resolve(repo.url)).toBe(pushed);
  });

  it("follows the remote's default branch when it changes", async () => {
    const remote = await createRepo({ 'app/config.yaml': 'on: main\n' });
    try {
      const cache = new GitCache({ root, tools, refreshMs: 60_000 });
      const onMain = await cache.resolve(remote.url);
      await remote.commit({ 'app/config.yaml': 'on: trunk\n' });
      await remote.branch('trunk');
      const onTrunk = (await git(['rev-parse', 'refs/heads/trunk'], { cwd: remote.remote })).stdout.trim();
      await git(['symbolic-ref', 'HEAD', 'refs/heads/trunk'], { cwd: remote.remote });
      await git(['update-ref', 'refs/heads/main', onMain], { cwd: remote.remote });
      cache.expire(remote.url);
      expect(await cache.resolve(remote.url)).toBe(onTrunk);
      expect((await cache.refs(remote.url)).defaultBranch).toBe('trunk');
    } finally {
      await remote.remove();
    }
  });

  it('keeps one mirror per credentials, and expire reaches all of them', async () => {
    const cache = new GitCache({ root: await mkdtemp(path.join(os.tmpdir(), 'gantry-git-cache-keyed-')), tools, refreshMs: 60_000 });
    await cache.resolve(repo.url);
    await cache.resolve(repo.url, {}, { key: 'a'.repeat(64) });
    expect(await readdir(path.join(cache.root, 'mirrors'))).toHaveLength(2 * 2); // each mirror has its lock folder
    const pushed = await repo.commit({ 'app/config.yaml': 'version: 6\n' });
    cache.expire(repo.url);
    expect(await cache.resolve(repo.url, {}, { key: 'a'.repeat(64) })).toBe(pushed);
    expect(await cache.resolve(repo.url)).toBe(pushed);
    await rm(cache.root, { recursive: true, force: true });
  });

  it('sweeps away snapshots and mirrors unused for longer than the maximum age, and keeps those in use', async () => {
    const cache = new GitCache({ root: await mkdtemp(path.join(os.tmpdir(), 'gantry-git-cache-sweep-')), tools, refreshMs: 0 });
    const old = await cache.checkout(repo.url);
    const past = new Date(Date.now() - 2 * 3600_000);
    const mirrors = path.join(cache.root, 'mirrors');
    for (const entry of [old.dir, ...(await readdir(mirrors)).map((name) => path.join(mirrors, name))]) await utimes(entry, past, past);
    expect(await cache.sweep(3600_000)).toBe(2);
    expect(await readdir(path.dirname(old.dir))).toEqual([]);
    expect((await readdir(mirrors)).filter((name) => !name.endsWith('.lock-target'))).toEqual([]);

    const used = await cache.checkout(repo.url);
    expect(await cache.sweep(3600_000)).toBe(0);
    expect(await readFile(path.join(used.dir, 'app/config.yaml'), 'utf8')).toMatch(/^version: /);
    await rm(cache.root, { recursive: true, force: true });
  });

  it('drops the branches and tags the remote deleted, and follows an annotated tag moved to another commit', async () => {
    const remote = await createRepo({ 'app/config.yaml': 'first\n' });
    try {
      const cache = new GitCache({ root, tools, refreshMs: 0 });
      const first = await cache.resolve(remote.url);
      await remote.branch('doomed');
      await annotatedTag(remote, 'doomed-tag', first);
      await annotatedTag(remote, 'moving', first);
      expect((await cache.refs(remote.url)).refs.map((ref) => ref.name)).toEqual([
        'refs/heads/doomed',
        'refs/heads/main',
        'refs/tags/doomed-tag',
        'refs/tags/moving',
      ]);
      const second = await remote.commit({ 'app/config.yaml': 'second\n' });
      await git(['branch', '-D', 'doomed'], { cwd: remote.remote });
      await git(['tag', '-d', 'doomed-tag'], { cwd: remote.remote });
      await annotatedTag(remote, 'moving', second);
      expect((await cache.refs(remote.url)).refs).toEqual([
        { name: 'refs/heads/main', commit: second },
        { name: 'refs/tags/moving', commit: second },
      ]);
      expect(await cache.resolve(remote.url, { tag: 'moving' })).toBe(second);
      expect(second).not.toBe(first);
    } finally {
      await remote.remove();
    }
  });

  it('asks the remote for its refs first, and runs no fetch while none of them changed', async () => {
    const remote = await createRepo({ 'app/config.yaml': 'quiet\n' });
    const own = await mkdtemp(path.join(os.tmpdir(), 'gantry-git-cache-quiet-'));
    try {
      const first = (await git(['rev-parse', 'main'], { cwd: remote.remote })).stdout.trim();
      await annotatedTag(remote, 'v1', first);
      await remote.branch('release');
      const cache = new GitCache({ root: own, tools, refreshMs: 0 });
      await cache.resolve(remote.url);
      const mirrors = path.join(own, 'mirrors');
      const mirror = path.join(
        mirrors,
        (await readdir(mirrors)).find((name) => !name.endsWith('.lock-target'))!,
      );
      const fetchHead = path.join(mirror, 'FETCH_HEAD');
      await cache.fetch(remote.url);
      // Resolved from the remote's answer while the mirror holds its refs: the annotated tag as its commit.
      expect(await cache.resolve(remote.url, { tag: 'v1' })).toBe(first);
      expect(await cache.resolve(remote.url, { branch: 'release' })).toBe(first);
      expect(await cache.resolve(remote.url)).toBe(first);
      await expect(cache.resolve(remote.url, { branch: 'gone' })).rejects.toThrow(`git repository ${remote.url} has no branch gone`);
      await expect(stat(fetchHead)).rejects.toThrow(/ENOENT/);
      const pushed = await remote.commit({ 'app/config.yaml': 'loud\n' });
      await cache.fetch(remote.url);
      expect((await readFile(fetchHead, 'utf8')).length).toBeGreaterThan(0);
      expect(await cache.resolve(remote.url)).toBe(pushed);
    } finally {
      await remote.remove();
      await rm(own, { recursive: true, force: true });
    }
  });

  it('resolves tags, branches and commits, keeping one snapshot per commit', async () => {
    const cache = new GitCache({ root, tools, refreshMs: 0 });
    const tagged = await repo.commit({ 'app/config.yaml': 'version: 3\n' });
    await repo.tag('v3');
    await repo.branch('release');
    await repo.commit({ 'app/config.yaml': 'version: 4\n' });
    expect((await cache.checkout(repo.url, { tag: 'v3' })).commit).toBe(tagged);
    expect((await cache.checkout(repo.url, { branch: 'release' })).commit).toBe(tagged);
    const byCommit = await cache.checkout(repo.url, { commit: tagged });
    expect(byCommit.dir).toBe((await cache.checkout(repo.url, { tag: 'v3' })).dir);
    expect(await readFile(path.join(byCommit.dir, 'app/config.yaml'), 'utf8')).toBe('version: 3\n');
  });

  it('resolves the newest tag matching a semver range', async () => {
    const cache = new GitCache({ root, tools, refreshMs: 0 });
    const first = await repo.commit({ 'app/config.yaml': 'version: 1.2.0\n' });
    await repo.tag('v1.2.0');
    const second = await repo.commit({ 'app/config.yaml': 'version: 1.10.0\n' });
    await repo.tag('v1.10.0');
    await repo.commit({ 'app/config.yaml': 'version: 2.0.0\n' });
    await repo.tag('v2.0.0');
    expect((await cache.checkout(repo.url, { semver: '~1.2' })).commit).toBe(first);
    expect((await cache.checkout(repo.url, { semver: '>=1.0.0 <2.0.0' })).commit).toBe(second);
    await expect(cache.checkout(repo.url, { semver: '>=4' })).rejects.toThrow('has no tag matching >=4');
  });

  it('fetches once more for a pinned commit the mirror does not have yet', async () => {
    const cache = new GitCache({ root, tools, refreshMs: 60_000 });
    await cache.resolve(repo.url);
    const pushed = await repo.commit({ 'app/new.yaml': 'x: 1\n' });
    expect((await cache.checkout(repo.url, { commit: pushed })).commit).toBe(pushed);
  });

  it('serves concurrent checkouts of one repository from one snapshot', async () => {
    const cache = new GitCache({ root, tools, refreshMs: 0 });
    const results = await Promise.all(Array.from({ length: 6 }, () => cache.checkout(repo.url, { branch: 'release' })));
    expect(new Set(results.map((result) => result.dir)).size).toBe(1);
    const entries = await readdir(path.dirname(results[0]?.dir ?? ''));
    expect(entries.filter((entry) => entry.includes('.partial-'))).toEqual([]);
  });

  it('names the URL that cannot be fetched and the ref that does not exist', async () => {
    const cache = new GitCache({ root, tools });
    await expect(cache.checkout('file:///nonexistent/repo.git')).rejects.toThrow(
      /git repository file:\/\/\/nonexistent\/repo\.git could not be fetched: .*does not exist|not appear/,
    );
    await expect(cache.checkout(repo.url, { tag: 'no-such-tag' })).rejects.toThrow(`git repository ${repo.url} has no tag no-such-tag`);
    await expect(cache.checkout(repo.url, { commit: 'deadbeef'.repeat(5) })).rejects.toThrow(/has no commit deadbeef/);
  });
});
