/**
 * `gantry login --server URL --token TOKEN`: checks the token against the server, then saves both for the
 * client commands (see client/login.ts).
 */
import { Command } from 'commander';
import { FleetClient } from '../client/fleet-client.ts';
import { saveLogin } from '../client/login.ts';

export function loginCommand(): Command {
  return new Command('login')
    .description('log in to a Gantry server: check the API token and save it for the other commands')
    .requiredOption('--server <url>', 'the server, e.g. http://127.0.0.1:8090')
    .requiredOption('--token <token>', 'an API token (the admin token is printed at the first start of the server)')
    .action(async (flags: { server: string; token: string }) => {
      try {
        await new FleetClient(flags).listClusters();
        const file = await saveLogin(flags, process.env);
        process.stderr.write(`logged in to ${flags.server} (saved in ${file})\n`);
      } catch (error) {
        process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exitCode = 1;
      }
    });
}
