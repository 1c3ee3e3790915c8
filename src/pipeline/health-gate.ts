/**
 * HEALTH gates (beyond Plural, which has no metric or soak gate): the source stage's services stay healthy for a
 * soak duration after their promotion context was recorded, and, optionally, a PromQL query against a
 * Prometheus-compatible HTTP API holds at every check during it. A query holds when its instant result is not empty
 * and no sample is 0 or NaN, so both a filter (`rate(errors[1m]) < 0.05`) and a `bool` comparison work. The gate
 * closes at the first check that fails; it opens at the first check at or after the soak's end.
 */
import { parseDuration } from '../duration.ts';

export interface HealthSpec {
  /** How long the services must stay healthy, in Go syntax (`5m`); `0` checks once. */
  soak: string;
  /** Between checks during the soak; default 15s. */
  interval?: string;
  prometheus?: { url: string; query: string };
}

export interface HealthProblem {
  field: string;
  message: string;
}

const DEFAULT_INTERVAL = '15s';

/** The first bad duration or URL, by its path relative to the gate's `health` field. */
export function healthProblem(spec: HealthSpec): HealthProblem | undefined {
  for (const field of ['soak', 'interval'] as const) {
    try {
      const ms = parseDuration(spec[field] ?? DEFAULT_INTERVAL);
      if (field === 'interval' && ms <= 0) return { field, message: 'the interval between checks must be longer than 0' };
    } catch (error) {
      return { field, message: (error as Error).message };
    }
  }
  if (spec.prometheus && !/^https?:\/\/./.test(spec.prometheus.url)) {
    return { field: 'prometheus.url', message: `${JSON.stringify(spec.prometheus.url)} is not an http(s) URL` };
  }
  return undefined;
}

export interface HealthCheck {
  state: 'OPEN' | 'PENDING' | 'CLOSED';
  reason: string;
  /** When to check again while PENDING. */
  checkAt?: Date;
}

/**
 * One check of the gate at `now`, for a context recorded at `since`.
 * @param unhealthy services of the stage not healthy now, by name and status; any of them closes the gate.
 */
export async function checkHealth(
  spec: HealthSpec,
  since: Date,
  now: Date,
  unhealthy: ReadonlyArray<{ name: string; status: string }>,
  signal?: AbortSignal,
): Promise<HealthCheck> {
  if (unhealthy.length > 0) {
    const which = unhealthy.map((service) => `${service.name} is ${service.status}`).join(', ');
    return { state: 'CLOSED', reason: `during the soak: ${which}` };
  }
  if (spec.prometheus) {
    const result = await queryHolds(spec.prometheus.url, spec.prometheus.query, signal);
    if (!result.holds) return { state: 'CLOSED', reason: `the query ${spec.prometheus.query} did not hold: ${result.detail}` };
  }
  const end = new Date(since.getTime() + parseDuration(spec.soak));
  if (now >= end) return { state: 'OPEN', reason: `healthy for ${spec.soak}${spec.prometheus ? ', the query holding' : ''}` };
  const next = new Date(Math.min(now.getTime() + parseDuration(spec.interval ?? DEFAULT_INTERVAL), end.getTime()));
  return { state: 'PENDING', reason: `soaking until ${end.toISOString()}`, checkAt: next };
}

interface QueryResponse {
  status: string;
  error?: string;
  data?: { resultType: string; result: Array<{ value?: [number, string] }> | [number, string] };
}

/** Runs the instant query. Holds: a non-empty result whose samples are all neither 0 nor NaN. */
async function queryHolds(url: string, query: string, signal?: AbortSignal): Promise<{ holds: boolean; detail: string }> {
  const address = new URL('/api/v1/query', url);
  address.searchParams.set('query', query);
  let answer: QueryResponse;
  try {
    const response = await fetch(address, { signal: signal ?? AbortSignal.timeout(10_000) });
    answer = (await response.json()) as QueryResponse;
  } catch (error) {
    return { holds: false, detail: `${url} cannot be queried: ${(error as Error).message}` };
  }
  if (answer.status !== 'success' || !answer.data) return { holds: false, detail: answer.error ?? 'the query failed' };
  const { resultType, result } = answer.data;
  const values =
    resultType === 'vector'
      ? (result as Array<{ value?: [number, string] }>).map((sample) => sample.value?.[1] ?? 'NaN')
      : [(result as [number, string])[1]];
  if (values.length === 0) return { holds: false, detail: 'no series matched' };
  const bad = values.filter((value) => Number(value) === 0 || Number.isNaN(Number(value)));
  return bad.length > 0 ? { holds: false, detail: `values ${values.join(', ')}` } : { holds: true, detail: `values ${values.join(', ')}` };
}
