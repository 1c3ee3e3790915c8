/**
 * One global service: its selector and the service its copies run, and its newest rollout (issue 43, part 2): each
 * wave with its copies, the revision each runs and where it stands (waiting, released, healthy, failed, rolled back),
 * why the rollout waits, and, for admins, Pause, Resume and Abort.
 */
import { Link, useParams } from 'react-router';
import { ApiError } from '../../../src/client/fleet-client.ts';
import { fleet } from '../api/fleet.ts';
import { useAllowed, useGlobalService, useRollout } from '../api/queries.ts';
import { RolloutView } from '../rollouts/rollout-view.tsx';
import { QueryView } from '../ui/query-view.tsx';
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
  const allowed = useAllowed([{ action: 'administer' }]);
  if (rollout.error instanceof ApiError && rollout.error.status === 404)
    return (
      <p className="muted">
        No rollout yet: the next new revision (a commit on its ref, a chart version, a template change) goes wave by wave.
      </p>
    );
  return (
    <QueryView query={rollout} what={`the rollout of ${name}`}>
      {(found) => (
        <RolloutView
          rollout={found}
          title="Rollout"
          act={allowed?.[0] ? (action) => fleet.rolloutAction(name, action) : undefined}
          changes={['globalservices']}
        />
      )}
    </QueryView>
  );
}
