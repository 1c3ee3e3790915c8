/**
 * `gantry login --server URL (--token TOKEN | --username NAME --password-stdin)`: checks the credentials against the
 * server, then saves the server and a token for the client commands (see client/login.ts). With a username, the
 * password (read from stdin, as `docker login --password-stdin`, so it is never in argv or shell history) makes an
 * API token acting as that user, named after this machine.
 */
import { hostname } from 'node:os';
import { text } from 'node:stream/consumers';
import { Command } from 'commander';
import { FleetClient } from '../client/fleet-client.ts';
import { saveLogin, tokenForPassword } from '../client/login.ts';
import { messageOf } from '../problems.ts';

interface LoginFlags {
  server: string;
  token?: string;
  username?: string;
  passwordStdin?: boolean;
}

export function loginCommand(): Command {
  return new Command('login')
    .requiredOption('--server <url>', 'the server, e.g. http://127.0.0.1:8090')
    .option('--token <token>', 'an API token (the admin token is printed at the first start of the server)')
    .option('--username <name>', 'a user (the admin user and its password are printed at the first start)')
    .option('--password-stdin', "read the user's password from stdin")
    .action(async (flags: LoginFlags) => {
      try {
        const token = await loginToken(flags);
        const identity = await new FleetClient({ server: flags.server, token }).whoAmI();
        const file = await saveLogin({ server: flags.server, token }, process.env);
        process.stderr.write(`logged in to ${flags.server} as ${identity.kind} ${identity.name} (saved in ${file})\n`);
      } catch (error) {
        process.stderr.write(`error: ${messageOf(error)}\n`);
        process.exitCode = 1;
      }
    });
}

/** @throws Error when neither or both ways are given, or the password is not on stdin. */
async function loginToken(flags: LoginFlags): Promise<string> {
  if ((flags.token === undefined) === (flags.username === undefined)) throw new Error('give either --token or --username');
  if (flags.token !== undefined) return flags.token;
  if (!flags.passwordStdin)
    throw new Error('--username needs --password-stdin: pipe the password in, e.g. gantry login … --password-stdin < file');
  const password = (await text(process.stdin)).replace(/\r?\n$/, '');
  return await tokenForPassword(flags.server, { username: flags.username!, password }, `gantry login on ${hostname()}`);
}
