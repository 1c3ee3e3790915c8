/**
 * Waiting until CustomResourceDefinitions just applied can be used, as `kubectl wait --for condition=established`
 * does and one step further. An applied CRD is not served at once: the API server first checks its names
 * (NamesAccepted), then marks it Established, and only after that does its kind appear in discovery (the
 * aggregated discovery document is refreshed asynchronously, seconds later on a loaded server). A client that
 * creates an object of the kind in between gets "no matches for kind" (kubectl) or an UnknownKindError (Gantry), as
 * the first `npm run demo` on a fresh machine did. Everything that installs CRDs and then uses them waits here.
 */
import { crdReadiness } from '../health/crd.ts';
import type { Cluster } from '../kube/cluster.ts';
import { sleep } from '../sleep.ts';

/** A CRD that is not served (yet): its name, why, and whether waiting longer can change that. */
export interface UnservedCrd {
  name: string;
  reason: string;
  /** True when the API server refused it (names clash, not establishable): only a changed spec helps. */
  failed: boolean;
}

export interface CrdWaitOptions {
  /** Limit of the whole wait, in milliseconds. */
  timeoutMs: number;
  /** Stops the wait; its reason is thrown. */
  signal?: AbortSignal | undefined;
}

/** First and longest pause between two looks, in milliseconds: quick for the usual second, gentle on a slow server. */
const FIRST_DELAY_MS = 50;
const MAX_DELAY_MS = 2_000;

/**
 * Waits until every CRD of `names` (metadata.name, e.g. `widgets.example.com`) is Established and each of its served
 * versions' kind is in the cluster's discovery (looked up afresh, so the shared mapping is refreshed on the way),
 * polling with a doubling pause.
 * @returns the CRDs not served when the wait ended: at once for those the API server refused, at `timeoutMs` for the
 *   others; empty when all are served.
 * @throws the signal's reason when it fires; the API server's errors other than a missing CRD.
 */
export async function waitForCrds(cluster: Cluster, names: readonly string[], options: CrdWaitOptions): Promise<UnservedCrd[]> {
  const deadline = Date.now() + options.timeoutMs;
  const refused: UnservedCrd[] = [];
  let pending = [...new Set(names)];
  for (let delay = FIRST_DELAY_MS; ; delay = Math.min(delay * 2, MAX_DELAY_MS)) {
    const waiting: UnservedCrd[] = [];
    // One at a time: a miss in discovery reloads the shared mapping, which the next CRD's lookup then reuses.
    for (const name of pending) {
      const unserved = await whyUnserved(cluster, name);
      if (unserved?.failed) refused.push(unserved);
      else if (unserved) waiting.push(unserved);
    }
    const left = deadline - Date.now();
    if (waiting.length === 0 || left <= 0) return [...refused, ...waiting];
    pending = waiting.map((entry) => entry.name);
    await sleep(Math.min(delay, left), options.signal);
  }
}

/**
 * Like waitForCrds, for callers that cannot go on without the CRDs.
 * @throws Error naming each CRD not served and why (refused by the API server, or not served within `timeoutMs`).
 */
export async function ensureCrdsServed(cluster: Cluster, names: readonly string[], options: CrdWaitOptions): Promise<void> {
  const unserved = await waitForCrds(cluster, names, options);
  if (unserved.length === 0) return;
  const timeout = `${Math.round(options.timeoutMs / 1000)} s`;
  throw new Error(
    `CustomResourceDefinition(s) not served: ${unserved
      .map((entry) => `${entry.name} (${entry.failed ? entry.reason : `${entry.reason} after ${timeout}`})`)
      .join('; ')}`,
  );
}

/**
 * Why the CRD `name` cannot be used yet, or undefined when it is Established (its readiness, src/health/crd.ts) and
 * its kinds are discovered.
 */
async function whyUnserved(cluster: Cluster, name: string): Promise<UnservedCrd | undefined> {
  const crd = await cluster.get({ group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition', namespace: '', name });
  if (!crd) return { name, reason: 'it does not exist', failed: false };
  const readiness = crdReadiness(crd);
  if (readiness.status !== 'Ready') return { name, reason: readiness.message, failed: readiness.status === 'Failed' };
  const spec = crd['spec'] as { group: string; names: { kind: string }; versions: Array<{ name: string; served: boolean }> };
  for (const version of spec.versions.filter((entry) => entry.served)) {
    if (!(await cluster.discovery.findFresh(spec.group, version.name, spec.names.kind)))
      return { name, reason: `${spec.group}/${version.name} ${spec.names.kind} not in discovery yet`, failed: false };
  }
  return undefined;
}
