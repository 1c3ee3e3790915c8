/** One cluster's KluctlDeployments: health, source, target, the last deploy's changes and when, drift. */
import { Link } from 'react-router';
import { Count } from '../ui/count.tsx';
import { EmptyRow } from '../ui/empty-row.tsx';
import { ErrorMessage } from '../ui/error-message.tsx';
import { LoadingPage } from '../ui/spinner.tsx';
import { StatusBadge } from '../ui/status-badge.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';
import { DriftTag } from './drift-tag.tsx';
import { kluctlHealth } from './kluctl-health.ts';
import { useKluctlDeployments } from './kluctl-queries.ts';
import { isNotServed } from '../kube/not-served.ts';
import { type KluctlDeployment, kluctlPage } from './kluctl-resource.ts';
import { kluctlSourceText } from './kluctl-source.ts';
import { ResultCounts } from './result-counts.tsx';

/** `label` names the cluster in headings (gantry webui's kubeconfig context). */
export function KluctlDeploymentsTable({ cluster, label, text }: { cluster: string; label: string; text: string }) {
  const list = useKluctlDeployments(cluster);
  if (list.isPending) return <LoadingPage what={`the KluctlDeployments of ${cluster}`} />;
  if (isNotServed(list.error))
    return (
      <p className="muted" data-kluctl-cluster={cluster}>
        {label}: no KluctlDeployments (the cluster does not serve the CRD).
      </p>
    );
  if (list.isError)
    return (
      <section aria-label={`KluctlDeployments of ${cluster}`}>
        <h2>{label}</h2>
        <ErrorMessage error={list.error} />
      </section>
    );
  const all = [...list.data.items].sort(
    (a, b) => a.metadata.namespace.localeCompare(b.metadata.namespace) || a.metadata.name.localeCompare(b.metadata.name),
  );
  const shown = all.filter((deployment) => matches(deployment, text));
  return (
    <section aria-label={`KluctlDeployments of ${cluster}`} data-kluctl-cluster={cluster}>
      <h2>
        {label} <Count shown={shown.length} total={all.length} />
      </h2>
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Health</th>
            <th>Source</th>
            <th>Target</th>
            <th>Last deploy</th>
            <th>Drift</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((deployment) => {
            const { namespace, name } = deployment.metadata;
            const deployed = deployment.status?.lastDeployResult;
            return (
              <tr key={`${namespace}/${name}`} data-kluctl={`${namespace}/${name}`}>
                <td>
                  <Link to={kluctlPage(cluster, deployment)}>
                    <span className="muted">{namespace}/</span>
                    {name}
                  </Link>
                </td>
                <td>
                  <StatusBadge {...kluctlHealth(deployment)} />
                </td>
                <td className="source">{kluctlSourceText(deployment)}</td>
                <td>{deployment.spec.target ?? <span className="muted">—</span>}</td>
                <td>
                  {deployed ? (
                    <span className="stacked">
                      <TimeAgo time={deployed.commandInfo.endTime} />
                      <ResultCounts summary={deployed} />
                    </span>
                  ) : (
                    <span className="muted">never</span>
                  )}
                </td>
                <td>
                  <DriftTag deployment={deployment} />
                </td>
              </tr>
            );
          })}
          {shown.length === 0 && <EmptyRow columns={6} text={all.length === 0 ? 'No KluctlDeployments on this cluster.' : undefined} />}
        </tbody>
      </table>
    </section>
  );
}

function matches(deployment: KluctlDeployment, text: string): boolean {
  const { namespace, name } = deployment.metadata;
  const haystack = [namespace, name, `${namespace}/${name}`, deployment.spec.target ?? '', kluctlSourceText(deployment)]
    .join(' ')
    .toLowerCase();
  return text
    .toLowerCase()
    .split(/\s+/)
    .every((word) => haystack.includes(word));
}
