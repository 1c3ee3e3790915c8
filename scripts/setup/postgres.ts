/**
 * PostgreSQL for the fleet server's tests: the server binaries from Debian's `postgresql` package (the same
 * PostgreSQL users run), installed with apt-get on a fresh Debian machine when missing.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { installDebianPackage } from './debian-package.ts';
import { pathExists } from './cache.ts';

/** Debian installs each major version's server binaries into its own folder. */
const DEBIAN_ROOT = '/usr/lib/postgresql';

/** The programs `.cluster/bin` links, by name. */
export const POSTGRES_PROGRAMS = ['postgres', 'initdb', 'psql', 'pg_ctl'] as const;

/**
 * The bin folder of the newest PostgreSQL major version installed, installing Debian's package first when there
 * is none.
 * @throws Error when none is installed and this process cannot install it (not root, or no apt-get), saying what
 *   to install.
 */
export async function ensurePostgres(report: (line: string) => void): Promise<string> {
  const found = await installedBinDir();
  if (found) return found;
  await installDebianPackage(
    'postgresql',
    'PostgreSQL server binaries not found in /usr/lib/postgresql',
    "the fleet server's tests run it",
    report,
  );
  const installed = await installedBinDir();
  if (!installed) throw new Error('setup: apt-get installed postgresql, but no server binaries appeared in /usr/lib/postgresql');
  return installed;
}

async function installedBinDir(): Promise<string | undefined> {
  const versions = (await readdir(DEBIAN_ROOT).catch(() => [])).filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const bin = join(DEBIAN_ROOT, version, 'bin');
    if (await pathExists(join(bin, 'initdb'))) return bin;
  }
  return undefined;
}
