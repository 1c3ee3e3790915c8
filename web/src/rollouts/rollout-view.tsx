/**
 * A progressive rollout (issue 43, part 2), a global service's or a pipeline stage's: each wave with its copies, the
 * revision each runs and where it stands (waiting, released, healthy, failed, rolled back), why it waits, and Pause,
 * Resume and Abort for those who may.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import type { Rollout } from '../api/types.ts';
import { ConfirmButton } from '../ui/confirm-button.tsx';
import { Spinner } from '../ui/spinner.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';

type RolloutAction = 'pause' | 'resume' | 'abort';

export interface RolloutViewProps {
  rollout: Rollout;
  /** The section's name and heading. */
  title: string;
  /** Pauses, resumes or aborts it; absent when the user may not. */
  act?: ((action: RolloutAction) => Promise<unknown>) | undefined;
  /** The query key the answer changes, fetched again once it came. */
  changes: readonly string[];
}

export function RolloutView({ rollout, title, act, changes }: RolloutViewProps) {
  return (
    <section aria-label={title} className="rollout" data-state={rollout.state}>
      <h2>
        {title} <span className={`badge rollout-${rollout.state.toLowerCase()}`}>{rollout.state}</span>{' '}
        <span className="muted">
          {rollout.cause}, <TimeAgo time={rollout.createdAt} />
        </span>
      </h2>
      {rollout.reason && <p className={rollout.state === 'FAILED' ? 'error' : undefined}>{rollout.reason}</p>}
      {act && <RolloutActions rollout={rollout} act={act} changes={changes} />}
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
            <tr key={`${copy.cluster}/${copy.service}`} data-copy={copy.cluster} data-state={copy.state}>
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

function RolloutActions({ rollout, act: run, changes }: { rollout: Rollout } & Required<Pick<RolloutViewProps, 'act' | 'changes'>>) {
  const queryClient = useQueryClient();
  const act = useMutation({
    mutationFn: run,
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: changes }),
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
