/**
 * The upstream Kluctl example projects (read-only, in ../shared) and writable copies of them for tests that
 * need a variant.
 */
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { findExamples, REPO_ROOT } from '../../scripts/examples.ts';

export { REPO_ROOT };

export const EXAMPLES_DIR = findExamples();

/** Absolute path of an example project, e.g. `microservices-demo/3-templating-and-multi-env`. */
export function example(relative: string): string {
  return path.join(EXAMPLES_DIR, relative);
}

/** A fresh writable copy of an example project; remove it with `removeCopy`. */
export async function copyExample(relative: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gantry-example-'));
  await cp(example(relative), dir, { recursive: true });
  return dir;
}

export async function removeCopy(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** Writes a throwaway project from `files` (path → content) and returns its folder; remove it with `removeCopy`. */
export async function writeProject(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gantry-project-'));
  for (const [file, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), content);
  }
  return dir;
}
