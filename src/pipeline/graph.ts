/**
 * A pipeline's shape checked before anything is stored: stages are the vertices of a directed acyclic graph, edges
 * carry gates, and each service of a stage names (in its criteria) the service of an upstream stage it is promoted
 * from, as Plural's Pipeline defines them. Problems name the offending element by its field path in the request.
 */
import { alg, Graph } from '@dagrejs/graphlib';

/** A service of the fleet by cluster and service name, as Plural's pipeline API names one (handle + name). */
export interface ServiceName {
  cluster: string;
  name: string;
}

export interface PipelineStageInput {
  name: string;
  services: Array<ServiceName & { criteria?: ServiceName & { secrets?: string[] } }>;
}

export interface PipelineEdgeInput {
  from: string;
  to: string;
  gates?: Array<{ name: string }>;
}

export interface PipelineShape {
  stages: PipelineStageInput[];
  edges: PipelineEdgeInput[];
}

/** The first problem found, or undefined for a good pipeline. */
export interface GraphProblem {
  /** Relative to the request body, e.g. `stages[1].services[0].criteria`. */
  field: string;
  message: string;
}

const serviceKey = (service: ServiceName) => `${service.cluster}/${service.name}`;

/**
 * Checks, in this order: stage names unique; edges between known stages, once each, with gates named uniquely;
 * no cycle; a service in one stage only; criteria naming a service of a stage upstream of its own.
 */
export function pipelineProblem(pipeline: PipelineShape): GraphProblem | undefined {
  return stageProblem(pipeline) ?? edgeProblem(pipeline) ?? cycleProblem(pipeline) ?? serviceProblem(pipeline) ?? criteriaProblem(pipeline);
}

/** The stages' graph: a vertex per stage, an edge per pipeline edge. */
export function stageGraph(pipeline: PipelineShape): Graph {
  const graph = new Graph({ directed: true });
  for (const stage of pipeline.stages) graph.setNode(stage.name);
  for (const edge of pipeline.edges) graph.setEdge(edge.from, edge.to);
  return graph;
}

function stageProblem(pipeline: PipelineShape): GraphProblem | undefined {
  const seen = new Set<string>();
  for (const [index, stage] of pipeline.stages.entries()) {
    if (seen.has(stage.name)) return { field: `stages[${index}].name`, message: `stage ${stage.name} is defined twice` };
    seen.add(stage.name);
  }
  return undefined;
}

function edgeProblem(pipeline: PipelineShape): GraphProblem | undefined {
  const stages = new Set(pipeline.stages.map((stage) => stage.name));
  const edges = new Set<string>();
  for (const [index, edge] of pipeline.edges.entries()) {
    for (const end of ['from', 'to'] as const) {
      if (!stages.has(edge[end]))
        return { field: `edges[${index}].${end}`, message: `edge ${edge.from} → ${edge.to}: no stage ${edge[end]}` };
    }
    const key = `${edge.from}\0${edge.to}`;
    if (edges.has(key)) return { field: `edges[${index}]`, message: `edge ${edge.from} → ${edge.to} is defined twice` };
    edges.add(key);
    const gates = new Set<string>();
    for (const [gateIndex, gate] of (edge.gates ?? []).entries()) {
      if (gates.has(gate.name)) {
        return {
          field: `edges[${index}].gates[${gateIndex}].name`,
          message: `edge ${edge.from} → ${edge.to} has two gates named ${gate.name}`,
        };
      }
      gates.add(gate.name);
    }
  }
  return undefined;
}

function cycleProblem(pipeline: PipelineShape): GraphProblem | undefined {
  const loop = pipeline.edges.findIndex((edge) => edge.from === edge.to);
  if (loop >= 0)
    return { field: `edges[${loop}]`, message: `edge ${pipeline.edges[loop]!.from} → ${pipeline.edges[loop]!.to} leads a stage to itself` };
  const graph = stageGraph(pipeline);
  const [cycle] = alg.findCycles(graph);
  if (!cycle) return undefined;
  // findCycles lists a cycle's vertices in no promised order: walk it along the edges to name it.
  const members = new Set(cycle);
  const path = [cycle[0]!];
  for (let next = successorIn(graph, path[0]!, members); next && next !== path[0]; next = successorIn(graph, next, members))
    path.push(next);
  // Named from the edge declared last among the cycle's: the one that closed it.
  const edgeIndex = (from: string, to: string) => pipeline.edges.findIndex((edge) => edge.from === from && edge.to === to);
  const indexes = path.map((from, position) => edgeIndex(from, path[(position + 1) % path.length]!));
  const closing = indexes.indexOf(Math.max(...indexes));
  const named = [...path.slice(closing + 1), ...path.slice(0, closing + 1)];
  return { field: `edges[${indexes[closing]}]`, message: `edges form a cycle: ${[...named, named[0]].join(' → ')}` };
}

function successorIn(graph: Graph, vertex: string, members: ReadonlySet<string>): string | undefined {
  return (graph.successors(vertex) ?? []).find((successor) => members.has(successor));
}

function serviceProblem(pipeline: PipelineShape): GraphProblem | undefined {
  const stageOf = new Map<string, string>();
  for (const [stageIndex, stage] of pipeline.stages.entries()) {
    for (const [index, service] of stage.services.entries()) {
      const other = stageOf.get(serviceKey(service));
      if (other !== undefined) {
        const where = other === stage.name ? `twice in stage ${other}` : `in stages ${other} and ${stage.name}`;
        return { field: `stages[${stageIndex}].services[${index}]`, message: `service ${serviceKey(service)} is ${where}` };
      }
      stageOf.set(serviceKey(service), stage.name);
    }
  }
  return undefined;
}

function criteriaProblem(pipeline: PipelineShape): GraphProblem | undefined {
  const graph = stageGraph(pipeline);
  const stageOf = new Map(pipeline.stages.flatMap((stage) => stage.services.map((service) => [serviceKey(service), stage.name] as const)));
  for (const [stageIndex, stage] of pipeline.stages.entries()) {
    const upstream = upstreamStages(graph, stage.name);
    for (const [index, service] of stage.services.entries()) {
      if (!service.criteria) continue;
      const source = serviceKey(service.criteria);
      const sourceStage = stageOf.get(source);
      if (sourceStage === undefined || !upstream.has(sourceStage)) {
        const found = sourceStage === undefined ? 'in no stage' : `in stage ${sourceStage}`;
        const allowed = upstream.size > 0 ? [...upstream].sort().join(', ') : 'none';
        return {
          field: `stages[${stageIndex}].services[${index}].criteria`,
          message: `criteria of ${serviceKey(service)} name ${source}, ${found}, not a stage upstream of ${stage.name} (upstream: ${allowed})`,
        };
      }
    }
  }
  return undefined;
}

/** The stages from which `stage` can be reached, itself left out. */
export function upstreamStages(graph: Graph, stage: string): Set<string> {
  const reversed = new Graph({ directed: true });
  for (const node of graph.nodes()) reversed.setNode(node);
  for (const edge of graph.edges()) reversed.setEdge(edge.w, edge.v);
  const ancestors = new Set(alg.preorder(reversed, [stage]));
  ancestors.delete(stage);
  return ancestors;
}
