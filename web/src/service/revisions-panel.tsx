/**
 * A service's revisions, newest first, each with who made it and why, which is current and which applied, and a
 * rollback for those who may write the service; below, the difference between any two of them.
 */
import { useAllowed, useRevisions } from '../api/queries.ts';
import type { Revision, Service } from '../api/types.ts';
import { QueryView } from '../ui/query-view.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';
import { RevisionDiff } from './revision-diff.tsx';
import { RollbackButton } from './rollback-button.tsx';
import { shortRef } from './source-text.ts';

export function RevisionsPanel({ service }: { service: Service }) {
  const revisions = useRevisions(service.cluster, service.name);
  const allowed = useAllowed([{ action: 'write', service: service.id }]);
  const mayWrite = allowed?.[0] === true;
  return (
    <QueryView query={revisions} what="revisions">
      {(all) => {
        const newestFirst = [...all].sort((a, b) => b.number - a.number);
        return (
          <>
            {allowed && !mayWrite && <p className="muted">Read-only: rolling back needs a writer's or admin's role on this service.</p>}
            <table aria-label="Revisions">
              <thead>
                <tr>
                  <th>Revision</th>
                  <th>Version</th>
                  <th>Made</th>
                  <th>By</th>
                  <th>Why</th>
                  <th>Commit</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {newestFirst.map((revision) => (
                  <tr key={revision.id} data-revision={revision.number}>
                    <td>
                      #{revision.number} <RevisionMarks service={service} revision={revision} />
                    </td>
                    <td>{revision.version ?? <span className="muted">—</span>}</td>
                    <td>
                      <TimeAgo time={revision.createdAt} />
                    </td>
                    <td>{revision.createdBy ?? <span className="muted">—</span>}</td>
                    <td>{revision.message ?? <span className="muted">—</span>}</td>
                    <td className="source">{revision.commit ? shortRef(revision.commit) : (revision.chartVersion ?? '—')}</td>
                    <td className="actions">
                      {mayWrite && revision.number !== service.revision.number && (
                        <RollbackButton service={service} revision={revision.number} />
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {newestFirst.length > 1 && <RevisionDiff service={service} revisions={newestFirst} />}
          </>
        );
      }}
    </QueryView>
  );
}

function RevisionMarks({ service, revision }: { service: Service; revision: Revision }) {
  return (
    <>
      {revision.number === service.revision.number && <span className="tag">{service.pinned ? 'current, pinned' : 'current'}</span>}
      {service.pinned && revision.number > service.revision.number && (
        <span className="tag warn" title="recorded while the service is pinned; the newest is applied when the pin is released">
          waiting
        </span>
      )}
      {revision.number === service.appliedRevision && <span className="tag ok">applied</span>}
      {revision.rejected && (
        <span className="tag warn" title={`rejected by ${revision.rejected.by}: ${revision.rejected.reason}`}>
          rejected
        </span>
      )}
    </>
  );
}
