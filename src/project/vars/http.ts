/**
 * The `http` vars source, as kluctl's variable-sources docs and vars loader define it: the response of a request
 * (GET unless `method` says otherwise, with `body` and `headers`) is parsed as YAML or JSON; `jsonPath` selects a
 * part of it, and a selected string is parsed as YAML in turn (Kluctl's loader does so; the docs' example selects a
 * mapping, which is taken as it is). A 404 counts as missing for ignoreMissing; other failures are errors.
 * Kluctl's interactive credential prompts (BASIC/NTLM) are not supported: send credentials in `headers`.
 */
import { request as httpRequest, type Dispatcher } from 'undici';
import type { VarsSourceHttp } from '../schema.ts';
import { queryJsonPath } from './json-path.ts';
import { describeRequestFailure, parseVarsText, type LoadedVars, type SourceRequest } from './source.ts';

const TIMEOUT_MS = 60_000;

/**
 * @returns undefined for a 404 under ignoreMissing.
 * @throws Error naming the source and URL for a failed request, a non-2xx status, invalid YAML or a jsonPath
 *   selecting nothing.
 */
export async function loadHttp(config: VarsSourceHttp, request: SourceRequest): Promise<LoadedVars | undefined> {
  const label = `${request.label}: http`;
  const method = (config.method ?? 'GET').toUpperCase() as Dispatcher.HttpMethod;
  let response: Dispatcher.ResponseData;
  try {
    response = await httpRequest(config.url, {
      method,
      body: config.body,
      headers: config.headers,
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (error) {
    throw new Error(`${label}: ${method} ${config.url} failed: ${describeRequestFailure(error, TIMEOUT_MS)}`);
  }
  const text = await response.body.text();
  if (response.statusCode === 404 && request.ignoreMissing) return undefined;
  if (response.statusCode < 200 || response.statusCode >= 300) {
    const hint = response.statusCode === 401 ? ' (Gantry does not prompt for credentials: send them in headers)' : '';
    throw new Error(`${label}: ${method} ${config.url} failed with status code ${response.statusCode}${hint}`);
  }
  const name = `${config.url} (response)`;
  const parsed = parseVarsText(text, name, request.multidoc);
  if (config.jsonPath === undefined) return { value: parsed, sensitive: false };
  const [selected] = queryJsonPath(parsed, config.jsonPath);
  if (selected === undefined) throw new Error(`${label}: jsonPath '${config.jsonPath}' selects nothing in the response of ${config.url}`);
  return {
    value: typeof selected === 'string' ? parseVarsText(selected, `${name} ${config.jsonPath}`, false) : selected,
    sensitive: false,
  };
}
