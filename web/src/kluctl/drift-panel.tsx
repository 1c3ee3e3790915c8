/**
 * The last drift detection (a server-side dry run of every rendered object on each reconcile): when, and which
 * objects differ from the render, changed or missing. The controller reports drift; only a deploy corrects it.
 */
import { TimeAgo } from '../ui/time-ago.tsx';
import { DriftTag } from './drift-tag.tsx';
import type { KluctlDeployment } from './kluctl-resource.ts';
import { ObjectRefLink, refText } from './object-ref-link.tsx';

export function DriftPanel({ cluster, deployment }: { cluster: string; deployment: KluctlDeployment }) {
  const drift = deployment.status?.lastDriftDetectionResult;
  return (
    <section aria-label="Drift">
      <h3>
        Drift <DriftTag deployment={deployment} />
        {drift && (
          <span className="muted small">
            checked <TimeAgo time={drift.commandInfo.endTime} />
          </span>
        )}
      </h3>
      {drift && drift.errors.length > 0 && (
        <ul className="messages error-box">
          {drift.errors.map((error, index) => (
            <li key={index}>{error}</li>
          ))}
        </ul>
      )}
      {drift && drift.objects.length > 0 && (
        <ul className="ref-list" aria-label="Drifted objects">
          {drift.objects.map((object) => (
            <li key={refText(object)}>
              <ObjectRefLink cluster={cluster} object={object} />
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
