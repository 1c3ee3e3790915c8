/**
 * KubeClient against the local cluster's real API server: retries of the 429s API Priority and Fairness answers
 * (with its Retry-After), per-request timeouts and cancellation (through a TCP proxy that freezes the connection),
 * and the throttle shared by the clusters of a pool.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl } from '../../test/support/cli.ts';
import { TcpProxy, testClient, waitFor } from '../controller/test-support.ts';
import { ClusterUnreachableError, KubeClient, loadKubeConfig, requestThrottle } from './client.ts';
import { ClusterPool } from './cluster-pool.ts';

const SUFFIX = Math.random().toString(36).slice(2, 8);
const USER = `gantry-throttled-${SUFFIX}`;
const LEVEL = `gantry-test-reject-${SUFFIX}`;

/** The local cluster's kubeconfig, acting as `user` (impersonation, so API Priority and Fairness classifies as that user). */
function impersonating(user: string): KubeConfig {
  const base = loadKubeConfig();
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: base.clusters,
    users: base.users.map((entry) => ({ ...entry, impersonateUser: user })),
    contexts: base.contexts,
    currentContext: base.getCurrentContext(),
  });
  return config;
}

describe('retries', () => {
  beforeAll(async () => {
    // A priority level with no seats of its own and no queue: the API server runs one request of the user at a time
    // and answers the others 429 with Retry-After: 1.
    await kubectl(
      ['apply', '-f', '-'],
      `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: ${LEVEL}}
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 0, lendablePercent: 0, borrowingLimitPercent: 0, limitResponse: {type: Reject}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: ${LEVEL}}
spec:
  priorityLevelConfiguration: {name: ${LEVEL}}
  matchingPrecedence: 100
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: ${USER}}}]
    resourceRules: [{verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true}]
    nonResourceRules: [{verbs: ['*'], nonResourceURLs: ['*']}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ${LEVEL}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: ${USER}}]
`,
    );
    await waitFor('the priority level in force', async () => (await rejectedBy(LEVEL)) !== undefined);
  });
  afterAll(async () => {
    await kubectl(['delete', 'flowschema,prioritylevelconfiguration,clusterrolebinding', LEVEL, '--ignore-not-found']);
  });

  /** How many requests the API server rejected at `level` so far (its Priority and Fairness debug dump). */
  async function rejectedBy(level: string): Promise<number | undefined> {
    const dump = await kubectl(['get', '--raw', '/debug/api_priority_and_fairness/dump_priority_levels']);
    const header = dump
      .split('\n')[0]!
      .split(',')
      .map((column) => column.trim());
    const row = dump
      .split('\n')
      .map((line) => line.split(',').map((cell) => cell.trim()))
      .find((cells) => cells[0] === level);
    return row && Number(row[header.indexOf('RejectedRequests')]);
  }

  it('serves every request the API server rejects with 429, after the Retry-After it asks for', async () => {
    const client = new KubeClient(impersonating(USER));
    const before = (await rejectedBy(LEVEL)) ?? 0;
    // On a loaded machine one round of requests may reach the server one at a time and none is rejected: go on until
    // the server rejected some, then judge that round.
    let rejected = 0;
    let elapsed = 0;
    for (let round = 0; round < 10 && rejected === 0; round++) {
      const started = Date.now();
      const answers = await Promise.all(Array.from({ length: 15 }, () => client.request('GET', '/api/v1/namespaces/default/configmaps')));
      elapsed = Date.now() - started;
      expect(answers.every((answer) => Array.isArray((answer as { items?: unknown }).items))).toBe(true);
      rejected = (await rejectedBy(LEVEL))! - before;
    }
    // Rejected requests were waited for, not sent again at once: a second at least, as Retry-After: 1 says.
    expect(rejected).toBeGreaterThan(0);
    expect(elapsed).toBeGreaterThanOrEqual(1000);
  });
});

describe('timeouts and cancellation', () => {
  let proxy: TcpProxy;
  beforeAll(async () => {
    proxy = await TcpProxy.start();
  });
  afterAll(async () => {
    await proxy.close();
  });

  it('gives up on a request without an answer after its timeout, and at once when the caller cancels', async () => {
    const base = testClient(proxy.url);
    const client = new KubeClient(base.config, { requestTimeoutMs: 500 });
    await client.request('GET', '/version');
    // The open connection passes nothing any more, and new ones are cut at once.
    proxy.freeze();
    proxy.refuse(true);
    await expect(client.request('GET', '/version')).rejects.toThrow(ClusterUnreachableError);
    await expect(client.request('GET', '/version')).rejects.toThrow('no answer in time');
    const stop = new AbortController();
    const bound = new KubeClient(base.config).withSignal(stop.signal);
    const pending = bound.request('GET', '/version');
    stop.abort(new Error('leadership lost'));
    await expect(pending).rejects.toThrow('leadership lost');
    await expect(bound.request('GET', '/version')).rejects.toThrow('leadership lost');
    proxy.refuse(false);
    proxy.thaw();
  });
});

describe('ClusterPool', () => {
  it('keeps one cluster per context, whatever the kubeconfig names it, and shares its discovery', async () => {
    const pool = new ClusterPool({ qps: 1000, burst: 1000 });
    try {
      const config = loadKubeConfig();
      const renamed = new KubeConfig();
      renamed.loadFromOptions({
        clusters: config.clusters.map((entry) => ({ ...entry, name: 'other-name' })),
        users: config.users.map((entry) => ({ ...entry, name: 'other-user' })),
        contexts: [{ name: 'other', cluster: 'other-name', user: 'other-user' }],
        currentContext: 'other',
      });
      const first = pool.get(config);
      expect(pool.get(renamed)).toBe(first);
      expect(pool.get(impersonating(USER))).not.toBe(first);
      for (let run = 0; run < 5; run++) await pool.get(config).withSignal(new AbortController().signal).discovery.resources();
      expect(pool.size).toBe(2);
      expect(pool.discoveryLoads).toBe(1);
      expect(() => pool.get(config, 'nope')).toThrow("context 'nope' not found in kubeconfig");
    } finally {
      await pool.close();
    }
  });

  it('holds every cluster of one API server to one request budget', async () => {
    const pool = new ClusterPool({ qps: 20, burst: 2 });
    try {
      const clusters = [pool.get(loadKubeConfig()), pool.get(impersonating('someone-else'))];
      const started = Date.now();
      await Promise.all(Array.from({ length: 22 }, (_, index) => clusters[index % 2]!.client.request('GET', '/version')));
      // Two at once, then 20 a second: the last of 22 cannot go before a second has passed.
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    } finally {
      await pool.close();
    }
  });

  it('refuses a rate limit that is not positive', () => {
    expect(() => requestThrottle({ qps: 0, burst: 1 })).toThrow('invalid API rate limit: qps 0, burst 1');
  });
});
