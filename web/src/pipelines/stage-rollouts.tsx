/**
 * The rollouts of the pipeline's stages that declare one: how the revisions the last promotion brought each stage
 * move wave by wave, with Pause, Resume and Abort for those who may approve the pipeline's gates.
 */
import type { Pipeline } from '../api/types.ts';
import { fleet } from '../api/fleet.ts';
import { RolloutView } from '../rollouts/rollout-view.tsx';

export function StageRollouts({ pipeline, mayAct }: { pipeline: Pipeline; mayAct: boolean }) {
  return (
    <>
      {pipeline.stages.flatMap((stage) =>
        stage.rolloutStatus
          ? [
              <RolloutView
                key={stage.name}
                rollout={stage.rolloutStatus}
                title={`Rollout of stage ${stage.name}`}
                act={mayAct ? (action) => fleet.stageRolloutAction(pipeline.name, stage.name, action) : undefined}
                changes={['pipelines']}
              />,
            ]
          : [],
      )}
    </>
  );
}
