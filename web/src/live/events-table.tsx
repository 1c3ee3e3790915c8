/**
 * A namespace's Events, or one object's, newest first: when last seen, Normal or Warning, the reason, the object
 * (linked to its page) and the message, with how often it happened. Asked again every few seconds.
 */
import type { KubeList } from '../kube/kube-object.ts';
import { usePolled } from '../kube/polled.ts';
import { EmptyRow } from '../ui/empty-row.tsx';
import { ErrorMessage } from '../ui/error-message.tsx';
import { LoadingPage } from '../ui/spinner.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';
import { LiveObjectLink } from './live-object-link.tsx';

interface KubeEvent {
  metadata: { uid?: string; name: string; creationTimestamp?: string };
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  series?: { count?: number; lastObservedTime?: string };
  eventTime?: string | null;
  firstTimestamp?: string | null;
  lastTimestamp?: string | null;
  involvedObject: { apiVersion?: string; kind?: string; name?: string; namespace?: string };
}

export function EventsTable(props: { cluster: string; namespace: string; involved?: { kind: string; name: string } }) {
  const selector = props.involved && `involvedObject.kind=${props.involved.kind},involvedObject.name=${props.involved.name}`;
  const path = `/api/v1/namespaces/${encodeURIComponent(props.namespace)}/events${selector ? `?fieldSelector=${encodeURIComponent(selector)}` : ''}`;
  const events = usePolled<KubeList<KubeEvent>>(props.cluster, path);
  if (events.isPending) return <LoadingPage what="events" />;
  if (events.isError) return <ErrorMessage error={events.error} />;
  // By time, not text: event times have microseconds, the older timestamps seconds.
  const newestFirst = [...events.data.items].sort((a, b) => (Date.parse(lastSeen(b)) || 0) - (Date.parse(lastSeen(a)) || 0));
  return (
    <table aria-label="Events" className="events">
      <thead>
        <tr>
          <th>Last seen</th>
          <th>Type</th>
          <th>Reason</th>
          {!props.involved && <th>Object</th>}
          <th>Message</th>
          <th>Count</th>
        </tr>
      </thead>
      <tbody>
        {newestFirst.map((event) => (
          <tr key={event.metadata.uid ?? event.metadata.name} data-event={event.reason}>
            <td className="nowrap">
              <TimeAgo time={lastSeen(event) || null} />
            </td>
            <td>
              {event.type === 'Warning' ? <span className="tag warn">Warning</span> : <span className="tag">{event.type ?? '—'}</span>}
            </td>
            <td>{event.reason ?? '—'}</td>
            {!props.involved && (
              <td>
                <LiveObjectLink cluster={props.cluster} object={event.involvedObject} />
              </td>
            )}
            <td className="message">{event.message}</td>
            <td>{event.series?.count ?? event.count ?? 1}</td>
          </tr>
        ))}
        {newestFirst.length === 0 && (
          <EmptyRow columns={props.involved ? 5 : 6} text="No events (the API server keeps them for an hour)." />
        )}
      </tbody>
    </table>
  );
}

function lastSeen(event: KubeEvent): string {
  return (
    event.series?.lastObservedTime ??
    event.lastTimestamp ??
    event.eventTime ??
    event.firstTimestamp ??
    event.metadata.creationTimestamp ??
    ''
  );
}
