/**
 * The `vault` vars source, as kluctl's variable-sources docs and its loader (pkg/vars/vault, on hashicorp/vault/api)
 * define it: `GET <address>/v1/<path>` with the token in VAULT_TOKEN. The vars are the mapping at `data.data` of the
 * answer: the secret of a KV version 2 engine, read at `<mount>/data/<name>`. A KV version 1 secret (read at
 * `<mount>/<name>`) counts only when it has a key `data` holding a mapping, as Kluctl reads it. The mapping is turned
 * into JSON, rendered as a template with the vars loaded so far and parsed, as Kluctl's loadFromString does.
 * Sensitive by default. A 404 counts as missing for ignoreMissing.
 *
 * The environment is the one `systemEnvVars` reads (the CLI's whole environment; in a server role, the variables its
 * operator allowed): VAULT_TOKEN, and VAULT_NAMESPACE for a namespace, as Vault's Go client reads them. Like Kluctl,
 * Gantry neither reads ~/.vault-token (the vault CLI's token helper) nor logs in by other methods. The token is sent
 * in the X-Vault-Token header only, never put in a message.
 */
import { request as httpRequest, type Dispatcher } from 'undici';
import type { VarsSourceVault } from '../schema.ts';
import { SensitiveValues } from '../sensitive.ts';
import { isPlainObject } from '../../values.ts';
import { describeRequestFailure, parseVarsText, renderWithContext, type LoadedVars, type SourceRequest } from './source.ts';
import { messageOf } from '../../problems.ts';

/** Kluctl's vault client gives up after 15 s. */
const TIMEOUT_MS = 15_000;

/** The parts of a Vault API answer used here (Vault's api.Secret, or its error body). */
interface VaultAnswer {
  data?: unknown;
  warnings?: string[] | null;
  errors?: string[];
}

/**
 * Reads the secret at `config.path` and loads its `data.data` mapping.
 * @returns undefined for a missing secret (404) under ignoreMissing.
 * @throws Error naming the source (`<file>: vars[<i>]: vault <path> at <address>`) for an address that is not a
 *   URL, an unreachable server, a refused token (403), a missing secret (404), another error status, an answer that
 *   is not JSON, a secret without a `data` mapping, and a template or YAML error in its values (masked).
 */
export async function loadVault(config: VarsSourceVault, request: SourceRequest): Promise<LoadedVars | undefined> {
  const source = `vault ${config.path} at ${config.address}`;
  const label = `${request.label}: ${source}`;
  const { variables, missingHint } = request.scope.environment.systemEnv;
  const token = variables['VAULT_TOKEN'];
  const headers = vaultHeaders(token, variables['VAULT_NAMESPACE']);
  const response = await getSecret(secretUrl(config, label), headers, request.scope.environment.signal, label);
  const answer = await readAnswer(response, label);
  if (response.statusCode === 404 && request.ignoreMissing) return undefined;
  const noToken = token === undefined ? `VAULT_TOKEN is not set${missingHint ? ` (${missingHint})` : ''}` : undefined;
  checkStatus(response.statusCode, answer, label, noToken);
  return { value: await parseSecret(secretOf(answer, label), source, label, request), sensitive: true };
}

async function getSecret(
  url: URL,
  headers: Record<string, string>,
  signal: AbortSignal | undefined,
  label: string,
): Promise<Dispatcher.ResponseData> {
  try {
    return await httpRequest(url, { method: 'GET', headers, signal: abortSignal(signal) });
  } catch (error) {
    throw new Error(`${label}: the server cannot be reached: ${describeRequestFailure(error, TIMEOUT_MS)}`);
  }
}

/** @throws Error for a 404, a 403 (saying why: `noToken`, or the token) and any other non-2xx status. */
function checkStatus(status: number, answer: VaultAnswer, label: string, noToken: string | undefined): void {
  if (status === 404) throw new Error(`${label}: no such secret (404)${warningsOf(answer)}`);
  if (status === 403) {
    const why = noToken ?? 'the token in VAULT_TOKEN is invalid or may not read this path';
    throw new Error(`${label}: permission denied (403): ${why}`);
  }
  if (status < 200 || status >= 300) throw new Error(`${label}: failed with status code ${status}${errorsOf(answer)}`);
}

/** The `data.data` mapping of a read. @throws Error when there is none. */
function secretOf(answer: VaultAnswer, label: string): Record<string, unknown> {
  const secret = isPlainObject(answer.data) ? answer.data['data'] : undefined;
  if (isPlainObject(secret)) return secret;
  throw new Error(
    `${label}: the secret has no 'data' mapping; Kluctl's vault source reads a KV version 2 secret at <mount>/data/<name>${warningsOf(answer)}`,
  );
}

/** `<address>/v1/<path>`, each path segment URL-encoded (a path prefix of the address is kept). */
function secretUrl(config: VarsSourceVault, label: string): URL {
  let url: URL;
  try {
    url = new URL(config.address);
  } catch {
    throw new Error(`${label}: address '${config.address}' is not a URL`);
  }
  const segments = config.path.split('/').filter((segment) => segment !== '');
  url.pathname = [url.pathname.replace(/\/+$/, ''), 'v1', ...segments.map(encodeURIComponent)].join('/');
  return url;
}

/** X-Vault-Request marks the call as an API call, as Vault's Go client does (Vault Agent requires it). */
function vaultHeaders(token: string | undefined, namespace: string | undefined): Record<string, string> {
  const headers: Record<string, string> = { 'x-vault-request': 'true' };
  if (token !== undefined) headers['x-vault-token'] = token;
  if (namespace) headers['x-vault-namespace'] = namespace;
  return headers;
}

function abortSignal(signal: AbortSignal | undefined): AbortSignal {
  const timeout = AbortSignal.timeout(TIMEOUT_MS);
  return signal ? AbortSignal.any([timeout, signal]) : timeout;
}

/** The JSON body of any answer; an empty body (Vault's bare 404) is `{}`. */
async function readAnswer(response: Dispatcher.ResponseData, label: string): Promise<VaultAnswer> {
  const text = await response.body.text();
  if (text.trim() === '') return {};
  try {
    const answer: unknown = JSON.parse(text);
    if (isPlainObject(answer)) return answer as VaultAnswer;
  } catch {
    // reported below
  }
  throw new Error(`${label}: the answer (status code ${response.statusCode}) is not a Vault API JSON object`);
}

/**
 * The secret's mapping as JSON, rendered with the vars loaded so far and parsed (Kluctl's loadFromString). Errors are
 * masked with the secret's own values, which are not yet among the run's sensitive values.
 */
async function parseSecret(secret: Record<string, unknown>, source: string, label: string, request: SourceRequest): Promise<unknown> {
  try {
    const rendered = (await renderWithContext(JSON.stringify(secret), request, source)) as string;
    return parseVarsText(rendered, source, request.multidoc);
  } catch (error) {
    const values = new SensitiveValues();
    values.add(secret);
    const masked = values.mask(messageOf(error));
    throw new Error(`${label}: the secret's values do not render or parse: ${masked}`);
  }
}

function warningsOf(answer: VaultAnswer): string {
  return answer.warnings?.length ? ` (server warnings: ${answer.warnings.join('; ')})` : '';
}

function errorsOf(answer: VaultAnswer): string {
  return answer.errors?.length ? `: ${answer.errors.join('; ')}` : '';
}
