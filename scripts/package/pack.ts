/**
 * The npm package as a file: `npm pack` of this repository (its prepack step builds lib/ and web/dist), which the
 * package test installs and the image build puts into the image.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from '../../src/exec.ts';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Packs Gantry into `destDir`.
 * @param report receives a line before the build and one with the package's file and size.
 * @returns the path of `gantry-<version>.tgz`.
 * @throws CommandError when the build or npm fails.
 */
export async function packGantry(destDir: string, report: (line: string) => void): Promise<string> {
  await mkdir(destDir, { recursive: true });
  report('npm pack (builds lib/ and web/dist first)');
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', destDir], { cwd: REPO_ROOT });
  const [packed] = JSON.parse(stdout) as Array<{ filename: string; size: number; unpackedSize: number; entryCount: number }>;
  if (!packed) throw new Error(`npm pack printed no package: ${stdout}`);
  const file = path.join(destDir, packed.filename);
  report(`${file}: ${packed.entryCount} files, ${mib(packed.size)} (${mib(packed.unpackedSize)} unpacked)`);
  return file;
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
