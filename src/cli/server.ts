/**
 * `gantry server`: the fleet's control plane. Serves the API until SIGTERM, on SQLite in the data folder unless
 * given a PostgreSQL URL. On an empty database it makes the first admin token and prints it once on stderr.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import type { Address } from '../controller/kluctl-deployment/controller.ts';
import { createLogger } from '../logger.ts';
import { startFleetServer } from '../server/server.ts';
import { GANTRY_VERSION } from '../version.ts';
import { parseAddress } from './options.ts';

interface ServerFlags {
  listen: Address;
  dataDir: string;
  databaseUrl?: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
}

/** `$GANTRY_DATA_DIR`, else `${XDG_DATA_HOME:-~/.local/share}/gantry`. */
function defaultDataDir(env: NodeJS.ProcessEnv): string {
  return env['GANTRY_DATA_DIR'] || join(env['XDG_DATA_HOME'] || join(homedir(), '.local', 'share'), 'gantry');
}

export function serverCommand(): Command {
  return new Command('server')
    .description('run the fleet control plane: the API that clusters, services and agents are managed through')
    .option('--listen <address>', 'host:port of the API', parseAddress, parseAddress('127.0.0.1:8090'))
    .option(
      '--data-dir <dir>',
      'folder of the embedded database (default: $GANTRY_DATA_DIR, else ~/.local/share/gantry)',
      defaultDataDir(process.env),
    )
    .option('--database-url <url>', 'postgres://user:password@host:port/database instead of the embedded SQLite ($GANTRY_DATABASE_URL)')
    .addOption(new Option('--log-level <level>', 'lowest level logged').choices(['debug', 'info', 'warn', 'error']).default('info'))
    .action((flags: ServerFlags) => runServer(flags));
}

async function runServer(flags: ServerFlags): Promise<void> {
  const log = createLogger({ level: flags.logLevel });
  const databaseUrl = flags.databaseUrl ?? process.env['GANTRY_DATABASE_URL'] ?? join(flags.dataDir, 'gantry.db');
  const server = await startFleetServer({ databaseUrl, host: flags.listen.host, port: flags.listen.port, log, version: GANTRY_VERSION });
  log.info({ url: server.url, database: server.store.kind }, 'serving the fleet API');
  if (server.adminToken) {
    process.stderr.write(`\nFirst start: the admin API token (shown only now; keep it):\n\n  ${server.adminToken}\n\n`);
  }
  await new Promise<void>((resolve) => {
    const shutdown = (signal: string) => {
      log.info({ signal }, 'shutting down');
      void server.close().then(resolve);
    };
    process.once('SIGTERM', () => shutdown('SIGTERM'));
    process.once('SIGINT', () => shutdown('SIGINT'));
  });
}
