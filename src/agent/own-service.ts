/**
 * The agent's own service (gantry-agent, server/kept-agents.ts): the Deployment this agent runs as, which the server
 * renders from what the agent said in its ping. The agent applies it only while it runs as that Deployment and the
 * service still names its own server URL and token Secret: a ping with a leaked deploy token could have told the
 * server otherwise, and applying that would point the cluster's agent (cluster-admin) at another server or Secret.
 * It never deletes it either: that would remove the agent that is deleting.
 */
import type { AgentService } from '../api/agent.ts';
import type { AgentDeployment } from '../api/services.ts';

/**
 * Why this agent does not apply `service`, or undefined when it may (any service but its own, or its own naming this
 * agent's server and Secret).
 * @param self how this agent runs (AgentOptions.deployment); undefined when it is not the install's Deployment.
 */
export function ownServiceRefusal(service: AgentService, self: AgentDeployment | undefined): string | undefined {
  const { agent } = service;
  if (!agent) return undefined;
  if (service.deleting) return `service ${service.name} is this agent's own Deployment: the agent does not delete itself`;
  if (!self)
    return (
      `service ${service.name} is the agent's own Deployment, but this agent does not run as it ` +
      '(no $GANTRY_AGENT_IMAGE and --token-secret): it is not applied'
    );
  if (agent.server !== self.server || agent.tokenSecret !== self.tokenSecret)
    return (
      `service ${service.name} names server ${agent.server} and token Secret ${agent.tokenSecret}, but this agent runs with ` +
      `${self.server} and ${self.tokenSecret}: it is not applied (a ping with this cluster's deploy token said otherwise)`
    );
  return undefined;
}
