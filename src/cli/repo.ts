/**
 * `gantry repo add|list|get|delete`: git repositories on the Gantry server. Secrets are read from files (never
 * from argv, where process lists show them) and sent once; the server keeps them sealed and never returns them.
 */
import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import type { ApiRepository } from '../client/fleet-client.ts';
import { addFleetOutputFlag, type FleetOutput, formatTable, printFleet, withFleetClient } from './fleet-output.ts';

interface AddFlags {
  username?: string;
  passwordFile?: string;
  identityFile?: string;
  knownHostsFile?: string;
  caFile?: string;
  output: FleetOutput;
}

export function repoCommand(): Command {
  const repo = new Command('repo');

  repo.addCommand(
    addFleetOutputFlag(
      new Command('add')
        .description('register a git repository; the server fetches it at once and reports PULLABLE or FAILED')
        .argument('<url>', 'https://, ssh://, git@host:path or file:// URL')
        .option('--username <name>', 'HTTPS user')
        .option('--password-file <file>', 'file holding the HTTPS password or token')
        .option('--identity-file <file>', 'SSH private key')
        .option('--known-hosts-file <file>', "the SSH server's host keys (required with --identity-file)")
        .option('--ca-file <file>', 'PEM of a private CA for HTTPS'),
    ).action((url: string, flags: AddFlags) =>
      withFleetClient(async (client) => {
        const credentials = await readCredentials(flags);
        const added = await client.createRepository({ url, ...(credentials ? { credentials } : {}) });
        printFleet(flags.output, added, () => formatRepository(added));
        if (added.health === 'FAILED') process.exitCode = 1;
      }),
    ),
  );

  repo.addCommand(
    addFleetOutputFlag(new Command('list').description('list repositories with their health')).action((flags: { output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const repositories = await client.listRepositories();
        printFleet(flags.output, repositories, () =>
          formatTable(
            ['URL', 'AUTH', 'HEALTH', 'PULLED', 'ERROR'],
            repositories.map((r) => [r.url, r.auth, r.health ?? 'unknown', r.pulledAt ?? 'never', firstLine(r.lastError)]),
          ),
        );
      }),
    ),
  );

  repo.addCommand(
    addFleetOutputFlag(new Command('get').description('show one repository').argument('<url-or-id>')).action(
      (idOrUrl: string, flags: { output: FleetOutput }) =>
        withFleetClient(async (client) => {
          const found = await client.getRepository(idOrUrl);
          printFleet(flags.output, found, () => formatRepository(found));
        }),
    ),
  );

  repo.addCommand(
    new Command('delete')
      .description('forget a repository no service uses')
      .argument('<url-or-id>')
      .action((idOrUrl: string) =>
        withFleetClient(async (client) => {
          await client.deleteRepository(idOrUrl);
          process.stderr.write(`repository ${idOrUrl} deleted\n`);
        }),
      ),
  );
  return repo;
}

async function readCredentials(flags: AddFlags): Promise<Record<string, string> | undefined> {
  const read = (file: string | undefined) => (file === undefined ? undefined : readFile(file, 'utf8'));
  const entries = Object.entries({
    username: flags.username,
    password: (await read(flags.passwordFile))?.trim(),
    identity: await read(flags.identityFile),
    known_hosts: await read(flags.knownHostsFile),
    caFile: await read(flags.caFile),
  }).filter((entry): entry is [string, string] => entry[1] !== undefined);
  return entries.length === 0 ? undefined : Object.fromEntries(entries);
}

function firstLine(text: string | null): string {
  return (text ?? '').split('\n')[0] ?? '';
}

function formatRepository(repository: ApiRepository): string {
  const rows: Array<[string, string]> = [
    ['url', repository.url],
    ['id', repository.id],
    ['auth', repository.auth],
    ['health', repository.health ?? 'unknown (not fetched yet)'],
    ['pulled', repository.pulledAt ?? 'never'],
    ...(repository.lastError ? [['error', repository.lastError] as [string, string]] : []),
  ];
  return rows.map(([key, value]) => `${`${key}:`.padEnd(8)}${value}\n`).join('');
}
