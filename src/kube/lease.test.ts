/**
 * Leader election against the local cluster: two (or three) electors in this process campaign for one Lease in a
 * namespace of the test's own, with short durations (lease 3 s, renew deadline 2 s, retry 0.5 s).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LeaderElector, microTime } from './lease.ts';
import { capturedLogger, createNamespace, deleteNamespace, TcpProxy, testClient, waitFor } from '../controller/test-support.ts';

const TIMING = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 };

interface LeaseJson {
  metadata: { resourceVersion: string };
  spec: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string; leaseTransitions?: number };
}

interface Candidate {
  elector: LeaderElector;
  started: number[];
  stopped: number[];
  signals: AbortSignal[];
}

describe('LeaderElector', () => {
  const client = testClient();
  let namespace: string;
  let leaseCount = 0;
  const electors: LeaderElector[] = [];

  beforeAll(async () => {
    namespace = await createNamespace(client, 'lease');
  });
  afterEach(async () => {
    for (const elector of electors.splice(0)) await elector.stop();
  });
  afterAll(async () => {
    await deleteNamespace(client, namespace);
  });

  function candidates(count: number, options: { server?: string[]; timing?: typeof TIMING } = {}) {
    const name = `lease-${++leaseCount}`;
    const list: Candidate[] = [];
    for (let index = 0; index < count; index++) {
      const candidate: Candidate = { started: [], stopped: [], signals: [], elector: undefined as unknown as LeaderElector };
      candidate.elector = new LeaderElector({
        client: testClient(options.server?.[index]),
        namespace,
        name,
        identity: `candidate-${index}`,
        ...(options.timing ?? TIMING),
        log: capturedLogger().log,
        onStartedLeading: (signal) => {
          candidate.started.push(Date.now());
          candidate.signals.push(signal);
        },
        onStoppedLeading: () => void candidate.stopped.push(Date.now()),
      });
      electors.push(candidate.elector);
      list.push(candidate);
    }
    const lease = () => client.request<LeaseJson>('GET', `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`);
    const leaders = () => list.filter((candidate) => candidate.elector.isLeader);
    return { name, list, lease, leaders };
  }

  /** Samples every 50 ms for `durationMs` that at most one candidate leads, and returns how many samples had one. */
  async function atMostOneLeader(leaders: () => Candidate[], durationMs: number): Promise<number> {
    let withLeader = 0;
    for (const end = Date.now() + durationMs; Date.now() < end;) {
      const count = leaders().length;
      expect(count).toBeLessThanOrEqual(1);
      if (count === 1) withLeader++;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return withLeader;
  }

  it('elects exactly one leader, which keeps renewing the lease', async () => {
    const { list, lease, leaders } = candidates(3);
    for (const candidate of list) candidate.elector.start();
    const [leader] = await waitFor('a leader', () => (leaders().length === 1 ? leaders() : undefined));
    const first = await lease();
    expect(first.spec).toMatchObject({ holderIdentity: leader!.elector.identity, leaseDurationSeconds: 3, leaseTransitions: 0 });
    const samples = await atMostOneLeader(leaders, 3000);
    expect(samples).toBeGreaterThan(50);
    expect(leaders()).toEqual([leader]);
    const later = await lease();
    expect(later.spec.holderIdentity).toBe(leader!.elector.identity);
    expect(later.spec.acquireTime).toBe(first.spec.acquireTime);
    expect(Date.parse(later.spec.renewTime!)).toBeGreaterThan(Date.parse(first.spec.renewTime!));
    expect(list.flatMap((candidate) => candidate.started)).toHaveLength(1);
  });

  it('hands over at once when the leader stops and releases the lease', async () => {
    // A lease far longer than the wait below: only the release can let the other candidate in that soon.
    const timing = { leaseDurationMs: 60_000, renewDeadlineMs: 2000, retryPeriodMs: 500 };
    const { list, lease, leaders } = candidates(2, { timing });
    for (const candidate of list) candidate.elector.start();
    const [leader] = await waitFor('a leader', () => (leaders().length === 1 ? leaders() : undefined));
    const other = list.find((candidate) => candidate !== leader)!;
    await leader!.elector.stop();
    expect(leader!.stopped).toHaveLength(1);
    expect(leader!.signals[0]!.aborted).toBe(true);
    await waitFor('the other candidate leading', () => other.elector.isLeader, 20_000);
    expect((await lease()).spec).toMatchObject({ holderIdentity: other.elector.identity, leaseTransitions: 1, leaseDurationSeconds: 60 });
  });

  it('leaves a Lease someone changed since its last renew to them when it stops, without reading it first', async () => {
    // No renew comes before the stop below: the leader's last write is its acquire.
    const timing = { leaseDurationMs: 60_000, renewDeadlineMs: 20_000, retryPeriodMs: 10_000 };
    const { name, list, lease, leaders } = candidates(1, { timing });
    const [candidate] = list;
    candidate!.elector.start();
    await waitFor('a leader', () => leaders().length === 1);
    const taken = await lease();
    await client.request('PUT', `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`, {
      body: { ...taken, spec: { ...taken.spec, holderIdentity: 'someone-else' } },
    });
    await candidate!.elector.stop();
    expect((await lease()).spec.holderIdentity).toBe('someone-else');
  });

  it('takes over only after the lease expired when the leader dies without releasing it', async () => {
    const { list, lease, leaders } = candidates(2);
    for (const candidate of list) candidate.elector.start();
    const [leader] = await waitFor('a leader', () => (leaders().length === 1 ? leaders() : undefined));
    const other = list.find((candidate) => candidate !== leader)!;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const lastRenew = Date.parse((await lease()).spec.renewTime!);
    await leader!.elector.stop({ release: false });
    expect((await lease()).spec.holderIdentity).toBe(leader!.elector.identity);
    await waitFor('the other candidate leading', () => other.elector.isLeader, 10_000);
    const waited = other.started[0]! - lastRenew;
    expect(waited).toBeGreaterThanOrEqual(TIMING.leaseDurationMs - 100);
    expect((await lease()).spec).toMatchObject({ holderIdentity: other.elector.identity, leaseTransitions: 1 });
  });

  it('gives up leading when renewing fails, before the other candidate takes over', async () => {
    const proxy = await TcpProxy.start();
    try {
      const { list, leaders } = candidates(2, { server: [proxy.url] });
      const [cut, direct] = list as [Candidate, Candidate];
      cut.elector.start();
      await waitFor('the proxied candidate leading', () => cut.elector.isLeader);
      direct.elector.start();
      await atMostOneLeader(leaders, 1000);
      proxy.refuse(true);
      proxy.cut();
      await waitFor('the other candidate leading', () => direct.elector.isLeader, 10_000);
      expect(cut.elector.isLeader).toBe(false);
      expect(cut.stopped).toHaveLength(1);
      expect(cut.signals[0]!.aborted).toBe(true);
      // The lost leader stopped before the lease could expire, so the two never led at the same time.
      expect(cut.stopped[0]!).toBeLessThan(direct.started[0]!);
      // Back in reach, the old leader is a candidate again and does not disturb the new one.
      proxy.refuse(false);
      await atMostOneLeader(leaders, 1500);
      expect(direct.elector.isLeader).toBe(true);
      expect(cut.started).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  it('refuses durations that break client-go rules', () => {
    const base = { client, namespace: 'x', name: 'y', log: capturedLogger().log, onStartedLeading: () => {}, onStoppedLeading: () => {} };
    expect(() => new LeaderElector({ ...base, leaseDurationMs: 2500 })).toThrow(/whole seconds/);
    expect(() => new LeaderElector({ ...base, leaseDurationMs: 2000, renewDeadlineMs: 2000 })).toThrow(/greater than renewDeadlineMs/);
    expect(() => new LeaderElector({ ...base, renewDeadlineMs: 1000, retryPeriodMs: 1000 })).toThrow(/retryPeriodMs × 1.2/);
  });

  it('writes MicroTime with six fractional digits', () => {
    expect(microTime(new Date('2026-01-02T03:04:05.678Z'))).toBe('2026-01-02T03:04:05.678000Z');
  });
});
