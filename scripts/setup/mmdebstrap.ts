/**
 * mmdebstrap, which builds the Debian root file system of Gantry's image (scripts/image/root-fs.ts) from Debian's
 * packages without a container engine; installed from Debian's own package with apt-get on a fresh Debian machine.
 */
import { run } from '../../src/exec.ts';
import { pathExists } from './cache.ts';

/** Where Debian's package puts the program. */
export const MMDEBSTRAP = '/usr/bin/mmdebstrap';

/**
 * Installs mmdebstrap when it is missing.
 * @throws Error when it is missing and this process cannot install it (not root, or no apt-get), saying what to install.
 */
export async function ensureMmdebstrap(report: (line: string) => void): Promise<void> {
  if (await pathExists(MMDEBSTRAP)) return;
  if (process.getuid?.() !== 0 || !(await pathExists('/usr/bin/apt-get'))) {
    throw new Error(`setup: ${MMDEBSTRAP} not found; install Debian package mmdebstrap (the image build needs it)`);
  }
  report('installing mmdebstrap for the image build (apt-get install mmdebstrap)');
  const env = { DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update', '-qq'], { env });
  await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'mmdebstrap'], { env });
  if (!(await pathExists(MMDEBSTRAP))) throw new Error(`setup: apt-get installed mmdebstrap, but ${MMDEBSTRAP} did not appear`);
}
