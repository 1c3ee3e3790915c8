/** What the last drift detection found: no drift, how many objects drifted, or that it failed; its time as tooltip. */
import type { KluctlDeployment } from './kluctl-resource.ts';

export function DriftTag({ deployment }: { deployment: KluctlDeployment }) {
  const drift = deployment.status?.lastDriftDetectionResult;
  if (!drift) return <span className="muted">not checked</span>;
  const when = `checked ${new Date(drift.commandInfo.endTime).toLocaleString()}`;
  if (drift.errors.length > 0)
    return (
      <span className="tag bad" title={`${when}: ${drift.errors[0]}`}>
        detection failed
      </span>
    );
  if (drift.objects.length === 0)
    return (
      <span className="tag ok" title={when}>
        no drift
      </span>
    );
  return (
    <span className="tag warn" title={when}>
      {drift.objects.length} drifted
    </span>
  );
}
