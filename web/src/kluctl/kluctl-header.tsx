/**
 * A KluctlDeployment's name and health, where it runs and what it deploys (source, target and discriminator, the
 * commit the controller saw last), and the Ready condition's words: why it is not ready (but for an approval
 * awaited, which the actions say), or its last deploy and validation.
 */
import { StatusBadge } from '../ui/status-badge.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';
import { awaitingApproval, condition, kluctlHealth } from './kluctl-health.ts';
import type { KluctlDeployment } from './kluctl-resource.ts';
import { kluctlSourceText, shortRevision } from './kluctl-source.ts';

export function KluctlHeader({ cluster, deployment }: { cluster: string; deployment: KluctlDeployment }) {
  const { spec, status } = deployment;
  const ready = condition(deployment, 'Ready');
  return (
    <header className="page-header">
      <h1>
        {deployment.metadata.name} <StatusBadge {...kluctlHealth(deployment)} />
        {spec.suspend && <span className="tag warn">suspended</span>}
        {spec.manual && <span className="tag">manual</span>}
      </h1>
      <dl className="facts kluctl-facts">
        <dt>Cluster</dt>
        <dd>{cluster}</dd>
        <dt>Namespace</dt>
        <dd>{deployment.metadata.namespace}</dd>
        <dt>Source</dt>
        <dd className="source">{kluctlSourceText(deployment)}</dd>
        <dt>Target</dt>
        <dd>
          {status?.targetKey?.targetName ?? spec.target ?? '—'}
          {status?.targetKey?.discriminator && <span className="muted"> ({status.targetKey.discriminator})</span>}
        </dd>
        <dt>Commit</dt>
        <dd className="source" data-testid="commit">
          {shortRevision(status?.observedCommit)}
        </dd>
        <dt>Interval</dt>
        <dd>
          {spec.interval}
          {spec.prune && <span className="muted">, prune</span>}
        </dd>
        <dt>Last deploy</dt>
        <dd>
          <TimeAgo time={status?.lastDeployResult?.commandInfo.endTime ?? null} />
        </dd>
      </dl>
      {ready?.status === 'False' && !(awaitingApproval(deployment) && ready.message.startsWith('waiting for approval')) && (
        <p className="error-box" role="alert">
          <strong>{ready.reason}:</strong> {ready.message}
        </p>
      )}
      {ready?.status === 'True' && <p className="muted ready-message">{ready.message}</p>}
    </header>
  );
}
