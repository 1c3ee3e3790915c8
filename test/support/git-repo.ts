/**
 * Real git repositories for tests: a work tree to commit into and a bare remote Gantry fetches from
 * (file:// URL; see git-server.ts for the same over HTTP).
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { run as runProgram, type RunResult } from '../../src/exec.ts';

export interface TestRepo {
  /** The bare remote. */
  remote: string;
  url: string;
  /**
   * Writes `files` (path → content; null deletes; `{ symlink: target }` makes a symbolic link, as git stores it),
   * commits, pushes to the remote, returns the commit.
   */
  commit(files: Record<string, string | { symlink: string } | null>, message?: string): Promise<string>;
  /** Creates and pushes a tag at the current commit. */
  tag(name: string): Promise<void>;
  /** Pushes the current commit to another branch. */
  branch(name: string): Promise<void>;
  remove(): Promise<void>;
}

/** git as a test's own user: no machine or user config, never a prompt, with the given options. */
export function git(args: readonly string[], options: { cwd?: string } = {}): Promise<RunResult> {
  return runProgram('git', args, {
    cwd: options.cwd,
    env: { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0' },
  });
}

export async function createRepo(files: Record<string, string> = { 'README.md': 'test\n' }): Promise<TestRepo> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'gantry-repo-'));
  const remote = path.join(root, 'remote.git');
  const work = path.join(root, 'work');
  await git(['init', '--quiet', '--bare', '--initial-branch=main', remote]);
  await git(['init', '--quiet', '--initial-branch=main', work]);
  const run = (args: string[]) => git(['-c', 'user.name=Gantry Test', '-c', 'user.email=test@gantry.dev', ...args], { cwd: work });
  await run(['remote', 'add', 'origin', remote]);
  const repo: TestRepo = {
    remote,
    url: `file://${remote}`,
    async commit(changes, message = 'change') {
      for (const [file, content] of Object.entries(changes)) {
        const target = path.join(work, file);
        await rm(target, { force: true });
        if (content === null) continue;
        await mkdir(path.dirname(target), { recursive: true });
        if (typeof content === 'string') await writeFile(target, content);
        else await symlink(content.symlink, target);
      }
      await run(['add', '--all']);
      await run(['commit', '--quiet', '--allow-empty', '-m', message]);
      await run(['push', '--quiet', 'origin', 'HEAD:main']);
      return (await run(['rev-parse', 'HEAD'])).stdout.trim();
    },
    async tag(name) {
      await run(['tag', name]);
      await run(['push', '--quiet', 'origin', name]);
    },
    async branch(name) {
      await run(['push', '--quiet', 'origin', `HEAD:refs/heads/${name}`]);
    },
    remove: () => rm(root, { recursive: true, force: true }),
  };
  await repo.commit(files, 'initial');
  return repo;
}
