/**
 * One pipeline: its stages and edges drawn, what each edge waits for, what its pending promotion would change on the
 * target clusters, the gates with what the user may decide, the stages' rollouts, and its promotions.
 */
import { Link, useParams } from 'react-router';
import { useAllowed, usePipeline } from '../api/queries.ts';
import { QueryView } from '../ui/query-view.tsx';
import { EdgePreviews } from './edge-previews.tsx';
import { EdgeWaits } from './edge-waits.tsx';
import { GatesTable } from './gates-table.tsx';
import { PipelineGraph } from './pipeline-graph.tsx';
import { PromotionHistory } from './promotion-history.tsx';
import { StageRollouts } from './stage-rollouts.tsx';

export function PipelinePage() {
  const { name = '' } = useParams();
  const pipeline = usePipeline(name);
  const allowed = useAllowed([
    { action: 'approve', pipeline: name },
    { action: 'force', pipeline: name },
  ]);
  const rights = allowed && { mayApprove: allowed[0] === true, mayForce: allowed[1] === true };
  return (
    <>
      <p className="breadcrumb">
        <Link to="/pipelines">Pipelines</Link> › {name}
      </p>
      <QueryView query={pipeline} what={`pipeline ${name}`}>
        {(found) => (
          <>
            <h1>{found.name}</h1>
            <PipelineGraph pipeline={found} />
            <EdgeWaits pipeline={found} />
            <EdgePreviews pipeline={found} mayAsk={rights?.mayApprove ?? false} />
            <GatesTable pipeline={found} rights={rights} />
            <StageRollouts pipeline={found} mayAct={rights?.mayApprove ?? false} />
            <PromotionHistory pipeline={found.name} />
          </>
        )}
      </QueryView>
    </>
  );
}
