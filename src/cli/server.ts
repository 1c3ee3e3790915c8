/**
 * `gantry server`: the fleet's control plane. Serves the API until SIGTERM, on SQLite in the data folder unless
 * given a PostgreSQL URL. On an empty database it makes the first admin token and prints it once on stderr.
 * `gantry server install` (server-install.ts) is a subcommand: commander runs this command's own action when no
 * subcommand is named, so `gantry server --listen …` is unchanged.
 */
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import type { Address } from '../ports.ts';
import { createLogger } from '../logger.ts';
import { defaultCacheDir } from '../engine-config.ts';
import { publicUrlArg, serverInstallCommand } from './server-install.ts';
import { runUntilSignalled } from './signals.ts';
import { durationArg, parseAddress } from './options.ts';
import { DEFAULT_DEPLOY_TOKEN_POLICY, loadEncryptionKey, startFleetServer } from '../server/index.ts';
import { isApiTokenForm } from '../crypto/tokens.ts';
import { GANTRY_IMAGE_REPOSITORY, GANTRY_VERSION } from '../version.ts';

interface ServerFlags {
  listen: Address;
  dataDir: string;
  databaseUrl?: string;
  encryptionKeyFile?: string;
  cacheDir?: string;
  gitPollInterval: number;
  maxDeleteShare: number;
  webhookSecretFile?: string;
  adminTokenFile?: string;
  adminPasswordFile?: string;
  advertiseUrl?: string;
  trustProxy?: string;
  allowOutbound?: string;
  publicUrl?: URL;
  deployTokenOverlap: number;
  deployTokenMaxAge: number;
  agentImage: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
}

/** `$GANTRY_DATA_DIR`, else `${XDG_DATA_HOME:-~/.local/share}/gantry`. */
function defaultDataDir(env: NodeJS.ProcessEnv): string {
  return env['GANTRY_DATA_DIR'] || join(env['XDG_DATA_HOME'] || join(homedir(), '.local', 'share'), 'gantry');
}

export function serverCommand(): Command {
  return new Command('server')
    .option('--listen <address>', 'host:port of the API', parseAddress, parseAddress('127.0.0.1:8090'))
    .option(
      '--data-dir <dir>',
      'folder of the embedded database (default: $GANTRY_DATA_DIR, else ~/.local/share/gantry)',
      defaultDataDir(process.env),
    )
    .option('--database-url <url>', 'postgres://user:password@host:port/database instead of the embedded SQLite ($GANTRY_DATABASE_URL)')
    .option(
      '--encryption-key-file <file>',
      'base64 key (32 bytes) sealing secrets in the database ($GANTRY_ENCRYPTION_KEY; made in the data folder for SQLite)',
    )
    .option('--cache-dir <dir>', 'git cache (default: $GANTRY_CACHE_DIR, else ~/.cache/gantry)')
    .option('--git-poll-interval <duration>', 'how often every git repository is fetched', durationArg, 60_000)
    .option(
      '--max-delete-share <fraction>',
      "a change deleting more than this share of one global service's copies is held until confirmed",
      shareArg,
      0.5,
    )
    .option('--webhook-secret-file <file>', 'turn on POST /hooks/git (GitHub, GitLab, Gitea pushes) with the secret in this file')
    .option(
      '--admin-token-file <file>',
      'on an empty database, the first admin token is the one in this file (gantry-api-…) instead of a printed one ($GANTRY_ADMIN_TOKEN_FILE)',
    )
    .option(
      '--trust-proxy <addresses>',
      'believe X-Forwarded-Proto/-For from these proxies (addresses or CIDRs, comma-separated), e.g. the ingress terminating TLS, so session cookies are Secure ($GANTRY_TRUST_PROXY)',
    )
    .option(
      '--allow-outbound <cidrs>',
      'special addresses (loopback, link-local, multicast; CIDRs, comma-separated) chart and git repository URLs may still reach, e.g. 127.0.0.0/8 for a chart server beside the server ($GANTRY_ALLOW_OUTBOUND)',
    )
    .option(
      '--public-url <url>',
      'where browsers reach the server, e.g. https://gantry.example.com: mutating browser requests must come from its origin, and with https session cookies are always Secure ($GANTRY_PUBLIC_URL)',
      publicUrlArg,
    )
    .option(
      '--advertise-url <url>',
      'where the other replicas reach this one, e.g. http://$(POD_IP):8090 (default: the --listen address) ($GANTRY_ADVERTISE_URL)',
    )
    .option(
      '--admin-password-file <file>',
      "on a database without users, the first user `admin`'s password is the one in this file instead of a printed one ($GANTRY_ADMIN_PASSWORD_FILE)",
    )
    .option(
      '--deploy-token-overlap <duration>',
      "how long a cluster's older deploy token still works after its agent's first request with a newer one",
      durationArg,
      DEFAULT_DEPLOY_TOKEN_POLICY.overlapMs,
    )
    .option(
      '--deploy-token-max-age <duration>',
      'agents rotate a deploy token this old by themselves (0: only when asked, gantry cluster rotate-token)',
      durationArg,
      DEFAULT_DEPLOY_TOKEN_POLICY.maxAgeMs,
    )
    .option(
      '--agent-image <repository>',
      "the agents' image repository (a mirror, say): each cluster's agent runs <repository>:<its wanted version> ($GANTRY_AGENT_IMAGE_REPOSITORY)",
      process.env['GANTRY_AGENT_IMAGE_REPOSITORY'] || GANTRY_IMAGE_REPOSITORY,
    )
    .addOption(new Option('--log-level <level>', 'lowest level logged').choices(['debug', 'info', 'warn', 'error']).default('info'))
    .addCommand(serverInstallCommand())
    .action((flags: ServerFlags) => runServer(flags));
}

async function runServer(flags: ServerFlags): Promise<void> {
  const log = createLogger({ level: flags.logLevel });
  const postgresUrl = flags.databaseUrl ?? process.env['GANTRY_DATABASE_URL'];
  const adminTokenFile = flags.adminTokenFile ?? process.env['GANTRY_ADMIN_TOKEN_FILE'];
  const adminPasswordFile = flags.adminPasswordFile ?? process.env['GANTRY_ADMIN_PASSWORD_FILE'];
  const box = await loadEncryptionKey({
    file: flags.encryptionKeyFile,
    env: process.env,
    dataDir: postgresUrl ? undefined : flags.dataDir,
  });
  const server = await startFleetServer({
    databaseUrl: postgresUrl ?? join(flags.dataDir, 'gantry.db'),
    host: flags.listen.host,
    port: flags.listen.port,
    log,
    version: GANTRY_VERSION,
    box,
    cacheDir: flags.cacheDir ?? defaultCacheDir(process.env),
    gitPollIntervalMs: flags.gitPollInterval,
    maxDeleteShare: flags.maxDeleteShare,
    webhookSecret: flags.webhookSecretFile ? await readSecretFile(flags.webhookSecretFile, '--webhook-secret-file') : undefined,
    adminToken: adminTokenFile ? await readAdminToken(adminTokenFile) : undefined,
    advertiseUrl: flags.advertiseUrl ?? process.env['GANTRY_ADVERTISE_URL'],
    trustProxy: flags.trustProxy ?? process.env['GANTRY_TRUST_PROXY'],
    publicUrl: flags.publicUrl ?? (process.env['GANTRY_PUBLIC_URL'] ? publicUrlArg(process.env['GANTRY_PUBLIC_URL']) : undefined),
    adminPassword: adminPasswordFile ? await readSecretFile(adminPasswordFile, '--admin-password-file') : undefined,
    outboundAllow: (flags.allowOutbound ?? process.env['GANTRY_ALLOW_OUTBOUND'] ?? '')
      .split(',')
      .map((cidr) => cidr.trim())
      .filter((cidr) => cidr !== ''),
    deployTokens: { overlapMs: flags.deployTokenOverlap, maxAgeMs: flags.deployTokenMaxAge },
    agentImage: flags.agentImage,
  });
  log.info({ url: server.url, database: server.store.kind }, 'serving the fleet API');
  if (server.adminToken && !adminTokenFile) {
    process.stderr.write(`\nFirst start: the admin API token (shown only now; keep it):\n\n  ${server.adminToken}\n\n`);
  }
  if (server.adminPassword && !adminPasswordFile) {
    process.stderr.write(`First start: log in at ${server.url} as admin with password (shown only now):\n\n  ${server.adminPassword}\n\n`);
  }
  await runUntilSignalled(log, () => server.close());
}

/** @throws Error naming the file when it holds no Gantry API token. */
async function readAdminToken(file: string): Promise<string> {
  const token = await readSecretFile(file, '--admin-token-file');
  if (!isApiTokenForm(token))
    throw new Error(`--admin-token-file ${file}: not a Gantry API token (gantry-api- and at least 32 letters, digits, - or _)`);
  return token;
}

function shareArg(text: string): number {
  const value = Number(text);
  if (!(value >= 0 && value <= 1)) throw new InvalidArgumentError(`'${text}' is not a fraction between 0 and 1`);
  return value;
}

/** @throws Error naming the file when it is empty. */
async function readSecretFile(file: string, flag: string): Promise<string> {
  const secret = (await readFile(file, 'utf8')).trim();
  if (!secret) throw new Error(`${flag} ${file} is empty`);
  return secret;
}
