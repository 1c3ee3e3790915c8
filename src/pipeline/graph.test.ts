/**
 * Pipeline shapes: the seed's two stages pass; duplicate stages and edges, unknown stages, self-loops and cycles,
 * services in two stages and criteria outside the upstream stages are refused, naming the element.
 */
import { describe, expect, test } from 'vitest';
import { pipelineProblem, type PipelineShape } from './graph.ts';

const service = (cluster: string, name = 'web', criteria?: { cluster: string; name: string; secrets?: string[] }) => ({
  cluster,
  name,
  ...(criteria ? { criteria } : {}),
});

/** dev → staging → prod, each promoting the previous stage's web service. */
const threeStages = (): PipelineShape => ({
  stages: [
    { name: 'dev', services: [service('dev')] },
    { name: 'staging', services: [service('staging', 'web', { cluster: 'dev', name: 'web' })] },
    { name: 'prod', services: [service('prod', 'web', { cluster: 'dev', name: 'web', secrets: ['version'] })] },
  ],
  edges: [
    { from: 'dev', to: 'staging', gates: [{ name: 'soak' }] },
    { from: 'staging', to: 'prod', gates: [{ name: 'approval' }, { name: 'window' }] },
  ],
});

describe('pipelineProblem', () => {
  test('a chain whose criteria name any upstream stage passes', () => {
    expect(pipelineProblem(threeStages())).toBeUndefined();
  });

  test.each([
    [
      'a stage defined twice',
      (p: PipelineShape) => p.stages.push({ name: 'dev', services: [] }),
      'stages[3].name',
      'stage dev is defined twice',
    ],
    [
      'an edge to an unknown stage',
      (p: PipelineShape) => p.edges.push({ from: 'prod', to: 'qa' }),
      'edges[2].to',
      'edge prod → qa: no stage qa',
    ],
    [
      'an edge defined twice',
      (p: PipelineShape) => p.edges.push({ from: 'dev', to: 'staging' }),
      'edges[2]',
      'edge dev → staging is defined twice',
    ],
    [
      'two gates of one name',
      (p: PipelineShape) => p.edges[1]!.gates!.push({ name: 'approval' }),
      'edges[1].gates[2].name',
      'edge staging → prod has two gates named approval',
    ],
    [
      'a self-loop',
      (p: PipelineShape) => p.edges.push({ from: 'prod', to: 'prod' }),
      'edges[2]',
      'edge prod → prod leads a stage to itself',
    ],
    [
      'a cycle',
      (p: PipelineShape) => p.edges.push({ from: 'prod', to: 'dev' }),
      'edges[2]',
      'edges form a cycle: dev → staging → prod → dev',
    ],
    [
      'a service in two stages',
      (p: PipelineShape) => p.stages[2]!.services.push(service('staging')),
      'stages[2].services[1]',
      'service staging/web is in stages staging and prod',
    ],
    [
      'criteria naming a downstream stage',
      (p: PipelineShape) => (p.stages[1]!.services[0]!.criteria = { cluster: 'prod', name: 'web' }),
      'stages[1].services[0].criteria',
      'criteria of staging/web name prod/web, in stage prod, not a stage upstream of staging (upstream: dev)',
    ],
    [
      'criteria naming a service in no stage',
      (p: PipelineShape) => (p.stages[2]!.services[0]!.criteria = { cluster: 'qa', name: 'web' }),
      'stages[2].services[0].criteria',
      'criteria of prod/web name qa/web, in no stage, not a stage upstream of prod (upstream: dev, staging)',
    ],
  ])('refuses %s, naming it', (_name, change, field, message) => {
    const pipeline = threeStages();
    change(pipeline);
    expect(pipelineProblem(pipeline)).toEqual({ field, message });
  });
});
