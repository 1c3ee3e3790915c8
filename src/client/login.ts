/**
 * Where the CLI finds its server and token: `gantry login` saves them to
 * `${XDG_CONFIG_HOME:-~/.config}/gantry/login.json` (mode 0600); GANTRY_SERVER and GANTRY_TOKEN override the file
 * (CI, scripts), as Plural's CLI reads PLURAL_CONSOLE_URL and PLURAL_ACCESS_TOKEN.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

export interface Login {
  server: string;
  token: string;
}

/** The login file's path for `env`: under XDG_CONFIG_HOME when set and non-empty, else under `~/.config`. */
export function loginFile(env: NodeJS.ProcessEnv): string {
  return join(env['XDG_CONFIG_HOME'] || join(homedir(), '.config'), 'gantry', 'login.json');
}

/**
 * Writes `login` as JSON to loginFile(env), making its folder; a file it creates gets mode 0600 (readable by its
 * owner only: it holds the token), an existing one is overwritten and keeps its mode.
 * @returns the file's path. @throws the filesystem's error when the folder or file cannot be written.
 */
export async function saveLogin(login: Login, env: NodeJS.ProcessEnv): Promise<string> {
  const file = loginFile(env);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(login, null, 2)}\n`, { mode: 0o600 });
  return file;
}

/** @throws Error saying how to log in when neither the environment nor the file gives a server and token. */
export async function readLogin(env: NodeJS.ProcessEnv): Promise<Login> {
  const file = loginFile(env);
  const saved = await readFile(file, 'utf8').then(
    (text) => JSON.parse(text) as Partial<Login>,
    () => ({}) as Partial<Login>,
  );
  const server = env['GANTRY_SERVER'] || saved.server;
  const token = env['GANTRY_TOKEN'] || saved.token;
  if (!server || !token)
    throw new Error(`not logged in: run gantry login --server URL --token TOKEN (or set GANTRY_SERVER and GANTRY_TOKEN)`);
  return { server, token };
}

/**
 * Logs in with a user's password and makes an API token acting as that user (named `name`), as `gantry login
 * --username` saves it. @throws Error with the server's message (a wrong password is "wrong username or password").
 */
export async function tokenForPassword(server: string, user: { username: string; password: string }, name: string): Promise<string> {
  const login = await fetch(new URL('/v1/login', server), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(user),
  });
  if (!login.ok)
    throw new Error(`${server}: ${((await login.json().catch(() => ({}))) as { message?: string }).message ?? `HTTP ${login.status}`}`);
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const made = await fetch(new URL('/v1/me/tokens', server), {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  const body = (await made.json()) as { token?: string; message?: string };
  await fetch(new URL('/v1/logout', server), { method: 'POST', headers: { cookie } });
  if (!made.ok || !body.token) throw new Error(`${server}: ${body.message ?? `HTTP ${made.status}`}`);
  return body.token;
}
