/**
 * A service's name, health and where it runs, the revision asked for against the one its agent applied (with
 * progress while they differ or its objects are not ready), a rollback's pin and what waits for its release, and the
 * errors its agent reported that belong to no
 * one object (those show in the component tree).
 */
import { useAllowed, useClusters } from '../api/queries.ts';
import type { Service } from '../api/types.ts';
import { serviceHealth } from '../health.ts';
import { Spinner } from '../ui/spinner.tsx';
import { StatusBadge } from '../ui/status-badge.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';
import { ReleaseButton } from './release-button.tsx';
import { sortErrors } from './component-errors.ts';
import { sourceText } from './source-text.ts';

export function ServiceHeader({ service }: { service: Service }) {
  const cluster = useClusters().data?.find((candidate) => candidate.name === service.cluster);
  const unattached = sortErrors(service).general;
  return (
    <header className="page-header">
      <h1>
        {service.name} <StatusBadge {...serviceHealth(service, cluster)} />
      </h1>
      <dl className="facts">
        <dt>Cluster</dt>
        <dd>{service.cluster}</dd>
        <dt>Namespace</dt>
        <dd>{service.namespace}</dd>
        <dt>Source</dt>
        <dd className="source">{sourceText(service)}</dd>
        <dt>Revision</dt>
        <dd data-testid="revision">
          #{service.revision.number}
          {service.revision.message && <span className="muted"> — {service.revision.message}</span>}
        </dd>
        <dt>Applied</dt>
        <dd data-testid="applied">{service.appliedRevision === null ? 'not yet' : `#${service.appliedRevision}`}</dd>
      </dl>
      {service.pinned && <PinLine service={service} />}
      <SyncProgress service={service} agentAway={cluster !== undefined && cluster.health !== 'HEALTHY'} />
      {unattached.length > 0 && (
        <ul className="error-box" aria-label="Errors">
          {unattached.map((error, index) => (
            <li key={index}>
              <strong>{error.source}:</strong> {error.message}
            </li>
          ))}
        </ul>
      )}
    </header>
  );
}

/** A rollback's pin: who set it when, what waits for its release, and the release for those who may write. */
function PinLine({ service }: { service: Service }) {
  const allowed = useAllowed([{ action: 'write', service: service.id }]);
  return (
    <div className="pin" role="status" aria-label="Pin">
      <p>
        Pinned at #{service.revision.number} by {service.pinned!.by} <TimeAgo time={service.pinned!.at} /> (a rollback):{' '}
        {service.pendingRevision === null
          ? 'newer revisions will wait here until the pin is released.'
          : `revision #${service.pendingRevision} waits for the pin's release.`}
      </p>
      {allowed?.[0] === true && <ReleaseButton service={service} />}
    </div>
  );
}

/** Shown while the agent has not applied the current revision, or its objects are not ready yet. */
function SyncProgress({ service, agentAway }: { service: Service; agentAway: boolean }) {
  const { number } = service.revision;
  if (service.deleting) return <Progress text="Deleting the service's objects…" />;
  if (service.appliedRevision !== number && agentAway)
    return (
      <p className="waiting" role="status">
        Revision #{number} waits for the agent of {service.cluster}, which is not reporting.
      </p>
    );
  if (service.appliedRevision !== number) return <Progress text={`Applying revision #${number}…`} />;
  if (service.status === 'synced') return <Progress text={`Revision #${number} applied; waiting for its objects to be ready…`} />;
  const drifted = service.components.filter((component) => component.drift && component.drift.state !== 'CONFLICT').length;
  if (drifted === 0) return null;
  const objects = `${drifted} object${drifted === 1 ? '' : 's'}`;
  if (service.syncConfig?.selfHeal === false)
    return (
      <p className="waiting" role="status">
        {objects} differ from revision #{number} in the cluster; selfHeal is off, so they are only reported until the next revision.
      </p>
    );
  return <Progress text={`${objects} differ from revision #${number} in the cluster; repairing…`} />;
}

function Progress({ text }: { text: string }) {
  return (
    <p className="progress" role="status">
      <Spinner /> {text}
    </p>
  );
}
