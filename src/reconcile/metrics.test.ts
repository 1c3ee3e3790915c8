import { describe, expect, it } from 'vitest';
import { ControllerMetrics } from './metrics.ts';

describe('ControllerMetrics', () => {
  it("records reconciles with Flux's histogram and buckets, and controller-runtime's counters", async () => {
    const metrics = new ControllerMetrics('kluctldeployments');
    const web = { kind: 'KluctlDeployment', namespace: 'apps', name: 'web' };
    metrics.recordReconcile('kluctldeployments', web, 0.2, 'requeue_after');
    metrics.recordReconcile('kluctldeployments', web, 3, 'error');
    const text = (await metrics.scrape()).body;
    const buckets = [...text.matchAll(/gotk_reconcile_duration_seconds_bucket\{le="([^"]+)"/g)].map((match) => Number(match[1]));
    expect(buckets).toHaveLength(11); // Flux's 10 buckets and +Inf
    expect(buckets[0]).toBeCloseTo(0.01);
    expect(buckets[9]).toBeCloseTo(1800);
    expect(text).toContain('gotk_reconcile_duration_seconds_count{kind="KluctlDeployment",name="web",namespace="apps"} 2');
    expect(text).toContain('controller_runtime_reconcile_total{controller="kluctldeployments",result="requeue_after"} 1');
    expect(text).toContain('controller_runtime_reconcile_errors_total{controller="kluctldeployments"} 1');
    expect(text).toContain('kluctldeployments_reconcile_failures_total{namespace="apps",name="web"} 1');
  });

  it('records deploys and drift for reconcilers, and forgets every series of a deleted object', async () => {
    const metrics = new ControllerMetrics('kluctldeployments');
    const web = { kind: 'KluctlDeployment', namespace: 'apps', name: 'web' };
    const db = { kind: 'KluctlDeployment', namespace: 'apps', name: 'db' };
    for (const object of [web, db]) {
      metrics.recordReconcile('kluctldeployments', object, 1, 'error');
      metrics.recordDeploy(object.namespace, object.name, true);
      metrics.recordDeploy(object.namespace, object.name, false);
      metrics.recordDrift(object.namespace, object.name, 3);
    }
    let text = (await metrics.scrape()).body;
    expect(text).toContain('kluctldeployments_deploys_total{namespace="apps",name="web",result="success"} 1');
    expect(text).toContain('kluctldeployments_deploys_total{namespace="apps",name="web",result="failure"} 1');
    expect(text).toContain('kluctldeployments_drifted_objects{namespace="apps",name="web"} 3');
    metrics.forgetObject(web);
    text = (await metrics.scrape()).body;
    expect(text).not.toContain('name="web"');
    expect(text).toContain('kluctldeployments_drifted_objects{namespace="apps",name="db"} 3');
  });

  it('reads queue gauges at scrape time and exports process metrics', async () => {
    const metrics = new ControllerMetrics('things');
    let depth = 4;
    metrics.observeQueue('things', () => ({ depth, activeWorkers: 2, maxWorkers: 5 }));
    expect((await metrics.scrape()).body).toContain('workqueue_depth{name="things"} 4');
    depth = 1;
    const text = (await metrics.scrape()).body;
    expect(text).toContain('workqueue_depth{name="things"} 1');
    expect(text).toContain('controller_runtime_active_workers{controller="things"} 2');
    expect(text).toContain('controller_runtime_max_concurrent_reconciles{controller="things"} 5');
    expect(text).toMatch(/^process_cpu_seconds_total \d/m);
  });

  it('refuses a subsystem that is no metric name prefix', () => {
    expect(() => new ControllerMetrics('kluctl-deployments')).toThrow(/not a valid Prometheus metric name prefix/);
  });
});
