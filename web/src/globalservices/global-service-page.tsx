/**
 * One global service: its selector and the service its copies run, and its newest rollout (issue 43, part 2): each
 * wave with its copies, the revision each runs and where it stands (waiting, released, healthy, failed, rolled back),
 * why the rollout waits, and, for admins, Pause, Resume and Abort.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { ApiError } from '../../../src/client/fleet-client.ts';
import { fleet } from '../api/fleet.ts';
import { useAllowed, useGlobalService, useRollout } from '../api/queries.ts';
import type { Rollout } from '../api/types.ts';
import { ConfirmButton } from '../ui/confirm-button.tsx';
import { QueryView } from '../ui/query-view.tsx';
import { Spinner } from '../ui/spinner.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';
import { selectorText } from './selector-text.ts';

export function GlobalServicePage() {
  const { name = '' } = useParams();
  const global = useGlobalService(name);
  return (
    <>
      <p className="breadcrumb">
        <Link to="/globalservices">Global services</Link> › {name}
      </p>
      <QueryView query={global} what={`global service ${name}`}>
        {(found) => (
          <>
            <h1>{found.name}</h1>
            <dl className="facts">
              <dt>Selector</dt>
              <dd>{selectorText(found)}</dd>
              <dt>Service</dt>
              <dd>
                {found.template.namespace}/{found.template.name}
              </dd>
              <dt>Source</dt>
              <dd className="source">
                {found.template.git
                  ? `${found.template.git.folder || '.'} @ ${found.template.git.ref}`
                  : `${found.template.helm?.chart} @ ${found.template.helm?.version}`}
              </dd>
              <dt>Rollout</dt>
              <dd>
                {found.rollout
                  ? `waves ${found.rollout.waves.map((wave) => wave.name).join(' → ')}, soak ${found.rollout.soak}, on failure ${found.rollout.onFailure}`
                  : 'all at once'}
              </dd>
            </dl>
            {found.rollout && <RolloutSection name={found.name} />}
          </>
        )}
      </QueryView>
    </>
  );
}

function RolloutSection({ name }: { name: string }) {
  const rollout = useRollout(name);
  if (rollout.error instanceof ApiError && rollout.error.status === 404)
    return <p className="muted">No rollout yet: the next new revision (a commit on its ref, a template change) goes wave by wave.</p>;
  return (
    <QueryView query={rollout} what={`the rollout of ${name}`}>
      {(found) => <RolloutView rollout={found} />}
    </QueryView>
  );
}

function RolloutView({ rollout }: { rollout: Rollout }) {
  const allowed = useAllowed([{ action: 'administer' }]);
  return (
    <section aria-label="Rollout" className="rollout" data-state={rollout.state}>
      <h2>
        Rollout <span className={`badge rollout-${rollout.state.toLowerCase()}`}>{rollout.state}</span>{' '}
        <span className="muted">
          {rollout.cause}, <TimeAgo time={rollout.createdAt} />
        </span>
      </h2>
      {rollout.reason && <p className={rollout.state === 'FAILED' ? 'error' : undefined}>{rollout.reason}</p>}
      {allowed?.[0] && <RolloutActions rollout={rollout} />}
      <table>
        <thead>
          <tr>
            <th>Wave</th>
            <th>Cluster</th>
            <th>State</th>
            <th>Revision</th>
            <th>Released</th>
            <th>Why</th>
          </tr>
        </thead>
        <tbody>
          {rollout.copies.map((copy) => (
            <tr key={copy.cluster} data-copy={copy.cluster} data-state={copy.state}>
              <td>
                {rollout.waves[copy.wave]}
                {copy.wave === rollout.wave && rollout.state === 'RUNNING' && <span className="muted"> (under way)</span>}
              </td>
              <td>
                <Link to={`/fleet/${encodeURIComponent(copy.cluster)}/${encodeURIComponent(copy.service)}`}>{copy.cluster}</Link>
              </td>
              <td>
                <span className={`badge copy-${copy.state.toLowerCase()}`}>{copy.state.replace('_', ' ')}</span>
              </td>
              <td>
                #{copy.revision ?? '-'} <span className="muted">(from #{copy.from})</span>
              </td>
              <td>{copy.releasedAt ? <TimeAgo time={copy.releasedAt} /> : <span className="muted">—</span>}</td>
              <td>{copy.reason ?? <span className="muted">—</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {rollout.waitingFor.length > 0 && (
        <ul aria-label="Waiting for" className="rollout-waits">
          {rollout.waitingFor.map((line) => (
            <li key={line}>{line}</li>
          ))}
        </ul>
      )}
    </section>
  );
}

function RolloutActions({ rollout }: { rollout: Rollout }) {
  const queryClient = useQueryClient();
  const act = useMutation({
    mutationFn: (action: 'pause' | 'resume' | 'abort') => fleet.rolloutAction(rollout.globalService, action),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ['globalservices'] }),
  });
  const running = (action: string) => act.isPending && act.variables === action;
  const under = rollout.state === 'RUNNING' || rollout.state === 'PAUSED';
  if (!under) return null;
  return (
    <div className="buttons">
      {rollout.state === 'RUNNING' && (
        <button type="button" disabled={act.isPending} onClick={() => act.mutate('pause')}>
          {running('pause') && <Spinner />} Pause
        </button>
      )}
      {rollout.state === 'PAUSED' && (
        <button type="button" className="primary" disabled={act.isPending} onClick={() => act.mutate('resume')}>
          {running('resume') && <Spinner />} Resume
        </button>
      )}
      <ConfirmButton
        label="Abort"
        confirmLabel="Confirm abort"
        run={() => act.mutateAsync('abort')}
        pending={running('abort')}
        error={null}
      />
      {act.isError && (
        <span className="error" role="alert">
          {act.error.message}
        </span>
      )}
    </div>
  );
}
