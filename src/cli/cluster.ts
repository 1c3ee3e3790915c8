/**
 * `gantry cluster create|list|get|tag|agent-version|delete|token|rotate-token|kubeconfig`: the fleet's clusters through
 * the server's API, as Plural's `plural cd clusters …`. Creating a cluster (or making a token) prints its agent's deploy
 * token once, or, with `--management` and `--class`, has Cluster API make it (and `--wait` follows that until it is
 * available); `agent-version` holds its agent at a version; `rotate-token` has the agent rotate its token by itself;
 * `kubeconfig` writes one for the auth proxy.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { Command } from 'commander';
import { toYaml } from '../yaml.ts';
import { type Login, readLogin } from '../client/login.ts';
import type { ApiCluster, FleetClient } from '../client/fleet-client.ts';
import { sleep } from '../sleep.ts';
import { durationArg, positiveIntegerArg } from './options.ts';
import { addFleetOutputFlag, type FleetOutput, formatTable, keyValueArg, printFleet, withFleetClient } from './fleet-output.ts';

interface CreateFlags {
  handle?: string;
  tag: Record<string, string>;
  distro?: string;
  management?: string;
  class?: string;
  kubernetesVersion?: string;
  namespace?: string;
  controlPlaneReplicas?: number;
  var: Record<string, string>;
  wait?: boolean;
  timeout: number;
  output: FleetOutput;
}

export function clusterCommand(): Command {
  const cluster = new Command('cluster');

  cluster.addCommand(
    addFleetOutputFlag(
      new Command('create')
        .description('register a cluster; prints the deploy token its agent needs (shown once)')
        .argument('<name>', 'cluster name (lower-case letters, digits and -)')
        .option('--handle <handle>', 'stable identity across renames (default: the name)')
        .option('--tag <key=value>', 'a tag (repeatable); global services select clusters by tags', keyValueArg, {})
        .option('--distro <distro>', 'generic, eks, aks, gke, k3s, openshift, …')
        .option('--management <cluster>', 'have Cluster API make it: the fleet cluster that runs Cluster API (needs --class)')
        .option('--class <name>', 'the ClusterClass on the management cluster')
        .option('--kubernetes-version <version>', 'with --class: its Kubernetes version, e.g. v1.35.4')
        .option('--namespace <namespace>', 'with --class: namespace of the ClusterClass and its Cluster API objects (default: default)')
        .option('--control-plane-replicas <n>', 'with --class: control plane machines', positiveIntegerArg)
        .option('--var <name=value>', 'with --class: a ClusterClass variable (repeatable); a JSON value is read as JSON', keyValueArg, {})
        .option('--wait', 'with --class: follow the provisioning until Cluster API reports it available')
        .option('--timeout <duration>', 'how long --wait waits', durationArg, 15 * 60_000),
    ).action((name: string, flags: CreateFlags) =>
      withFleetClient(async (client) => {
        const provisioning = provisioningOf(flags);
        const created = await client.createCluster({
          name,
          handle: flags.handle,
          tags: flags.tag,
          distro: flags.distro,
          ...(provisioning ? { provisioning } : {}),
        });
        const done = provisioning && flags.wait ? await provisioned(client, name, flags.timeout) : undefined;
        printFleet(flags.output, done ? { ...created, cluster: done } : created, () =>
          provisioning
            ? `cluster ${name} created: Cluster API makes it on cluster ${provisioning.management} (class ${provisioning.class})\n` +
              (done ? `provisioned: ${provisioningText(done)}\n` : `follow it with: gantry cluster get ${name}\n`)
            : `cluster ${created.cluster.name} created\ndeploy token (shown only now):\n\n  ${created.deployToken}\n\n` +
              `install its agent with: gantry agent install --server URL --token <deploy token> --context <kubeconfig context>\n`,
        );
      }),
    ),
  );

  cluster.addCommand(
    addFleetOutputFlag(new Command('list').description('list clusters with their tags, versions and last ping')).action(
      (flags: { output: FleetOutput }) =>
        withFleetClient(async (client) => {
          const clusters = await client.listClusters();
          printFleet(flags.output, clusters, () =>
            formatTable(
              ['NAME', 'HANDLE', 'TAGS', 'DISTRO', 'KUBERNETES', 'AGENT', 'HEALTH', 'PINGED'],
              clusters.map((c) => [
                c.name,
                c.handle,
                formatTags(c.tags),
                c.distro ?? '',
                c.kubernetesVersion ?? '',
                agentState(c),
                c.health,
                c.pingedAt ?? 'never',
              ]),
            ),
          );
        }),
    ),
  );

  cluster.addCommand(
    addFleetOutputFlag(new Command('get').description('show one cluster').argument('<name>')).action(
      (name: string, flags: { output: FleetOutput }) =>
        withFleetClient(async (client) => {
          const found = await client.getCluster(name);
          printFleet(flags.output, found, () => formatCluster(found));
        }),
    ),
  );

  cluster.addCommand(
    addFleetOutputFlag(
      new Command('tag')
        .description("replace a cluster's tags; global services add or remove their copies to follow")
        .argument('<name>')
        .option('--tag <key=value>', 'a tag (repeatable); none clears them', keyValueArg, {})
        .option('--confirm', 'go ahead even when a global service would lose more than the allowed share of its copies'),
    ).action((name: string, flags: { tag: Record<string, string>; confirm?: boolean; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const tagged = await client.setClusterTags(name, flags.tag, flags.confirm ?? false);
        printFleet(flags.output, tagged, () => formatCluster(tagged));
      }),
    ),
  );

  cluster.addCommand(
    addFleetOutputFlag(
      new Command('agent-version')
        .description(
          "hold the cluster's agent at a version (an image tag), or let it follow the server's own with --unpin; an agent " +
            "running as the install's Deployment moves to it through its service gantry-agent",
        )
        .argument('<name>')
        .argument('[version]', 'e.g. 0.2.0')
        .option('--unpin', "follow the server's own version again"),
    ).action((name: string, version: string | undefined, flags: { unpin?: boolean; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        if ((version === undefined) === !flags.unpin) throw new Error('give a version or --unpin, not both');
        const pinned = await client.setAgentVersion(name, flags.unpin ? null : (version ?? null));
        printFleet(flags.output, pinned, () => formatCluster(pinned));
      }),
    ),
  );

  cluster.addCommand(
    new Command('delete')
      .description(
        "forget a cluster and its services' records (objects in the cluster are left as they are); a cluster Cluster API made is torn down by it",
      )
      .argument('<name>')
      .action((name: string) =>
        withFleetClient(async (client) => {
          await client.deleteCluster(name);
          process.stderr.write(`cluster ${name} deleted\n`);
        }),
      ),
  );

  cluster.addCommand(
    addFleetOutputFlag(
      new Command('token')
        .description(
          "make a new deploy token for the cluster's agent (shown once); older ones end an overlap after its first use, at once with --revoke-others",
        )
        .argument('<name>')
        .option('--revoke-others', 'revoke every earlier token of the cluster now (a leaked token); their push channels close'),
    ).action((name: string, flags: { revokeOthers?: boolean; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const rotated = await client.rotateDeployToken(name, flags.revokeOthers ?? false);
        printFleet(flags.output, rotated, () => `${rotated.deployToken}\n`);
      }),
    ),
  );
  cluster.addCommand(
    addFleetOutputFlag(
      new Command('rotate-token')
        .description(
          "have the cluster's agent rotate its deploy token by itself at its next ping (no token is shown): it stores " +
            'the new one where it read the old one (--token-file, --token-secret), and the old one expires after the overlap',
        )
        .argument('<name>')
        .option('--wait', "wait until the agent uses its new token (the agent's next ping)")
        .option('--timeout <duration>', 'with --wait: give up after this long', durationArg, 5 * 60_000),
    ).action((name: string, flags: { wait?: boolean; timeout: number; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const requested = await client.requestTokenRotation(name);
        const done = flags.wait ? await tokenRotated(client, requested, flags.timeout) : requested;
        printFleet(flags.output, done, () =>
          rotationDone(done)
            ? `cluster ${name}: the agent uses a deploy token made ${done.deployTokenCreatedAt}\n`
            : `cluster ${name}: rotation requested; the agent rotates its deploy token at its next ping\n`,
        );
      }),
    ),
  );

  cluster.addCommand(
    addFleetOutputFlag(
      new Command('kubeconfig')
        .description("a kubeconfig reaching the cluster's Kubernetes API through the server's auth proxy and its agent, as you")
        .argument('<name>', 'cluster name')
        .option('--file <path>', 'write it to this file (mode 0600) instead of printing it')
        .option('--certificate-authority <file>', "PEM of the CA that signed the server's certificate, when not a public one"),
    ).action((name: string, flags: { file?: string; certificateAuthority?: string; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const login = await readLogin(process.env);
        // client-go sends no credentials to an http:// server, so such a kubeconfig could only fail.
        if (!login.server.startsWith('https://'))
          throw new Error(`kubectl sends credentials only over TLS: log in to the server's https:// address (not ${login.server})`);
        await client.getCluster(name);
        const ca = flags.certificateAuthority === undefined ? undefined : await readFile(flags.certificateAuthority);
        const config = proxyKubeconfig(login, name, ca);
        const text = flags.output === 'json' ? `${JSON.stringify(config, null, 2)}\n` : toYaml(config);
        if (flags.file === undefined) process.stdout.write(text);
        else {
          await writeFile(flags.file, text, { mode: 0o600 });
          process.stderr.write(`wrote ${flags.file}: kubectl --kubeconfig ${flags.file} get pods -A\n`);
        }
      }),
    ),
  );
  return cluster;
}

/**
 * A kubeconfig whose server is the proxy path of the cluster and whose user is the logged-in token, so kubectl's
 * requests are the user's (the agent impersonates them on the cluster). Context and cluster are named `gantry-NAME`.
 */
function proxyKubeconfig(login: Login, cluster: string, ca: Buffer | undefined): object {
  const name = `gantry-${cluster}`;
  const server = `${login.server.replace(/\/$/, '')}/v1/clusters/${encodeURIComponent(cluster)}/proxy`;
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster: { server, ...(ca ? { 'certificate-authority-data': ca.toString('base64') } : {}) } }],
    users: [{ name, user: { token: login.token } }],
    contexts: [{ name, context: { cluster: name, user: name } }],
    'current-context': name,
  };
}

/** The create flags' provisioning spec; undefined without --management and --class. @throws Error when only some are given. */
function provisioningOf(flags: CreateFlags): NonNullable<ApiCluster['provisioning']> | undefined {
  const given = flags.management !== undefined || flags.class !== undefined;
  if (!given) {
    const stray =
      flags.kubernetesVersion ?? flags.namespace ?? flags.controlPlaneReplicas ?? (Object.keys(flags.var).length > 0 ? '--var' : undefined);
    if (stray !== undefined || flags.wait)
      throw new Error('--kubernetes-version, --namespace, --control-plane-replicas, --var and --wait need --management and --class');
    return undefined;
  }
  if (!flags.management || !flags.class || !flags.kubernetesVersion)
    throw new Error('a cluster Cluster API makes needs --management, --class and --kubernetes-version');
  const variables = Object.fromEntries(Object.entries(flags.var).map(([key, value]) => [key, jsonOrText(value)]));
  return {
    management: flags.management,
    class: flags.class,
    version: flags.kubernetesVersion,
    ...(flags.namespace ? { namespace: flags.namespace } : {}),
    ...(flags.controlPlaneReplicas ? { controlPlaneReplicas: flags.controlPlaneReplicas } : {}),
    ...(Object.keys(variables).length > 0 ? { variables } : {}),
  };
}

function jsonOrText(value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

function provisioningSpecText(spec: NonNullable<ApiCluster['provisioning']>): string {
  const replicas = spec.controlPlaneReplicas ? `, ${spec.controlPlaneReplicas} control plane machines` : '';
  return `Cluster API on ${spec.management}: class ${spec.class} (namespace ${spec.namespace ?? 'default'}), Kubernetes ${spec.version}${replicas}`;
}

function provisioningText(cluster: ApiCluster): string {
  const status = cluster.provisioningStatus;
  return status ? `${status.state}: ${status.message} (service ${status.service} of ${cluster.provisioning?.management ?? ''})` : '';
}

/**
 * The cluster once Cluster API reports it available, looked at every second; each new state is printed to stderr.
 * @throws Error when it FAILED or after `timeoutMs`, with the last status.
 */
async function provisioned(client: FleetClient, name: string, timeoutMs: number): Promise<ApiCluster> {
  const deadline = Date.now() + timeoutMs;
  let said = '';
  for (;;) {
    const cluster = await client.getCluster(name);
    const text = provisioningText(cluster);
    if (text !== said) process.stderr.write(`${name}: ${text}\n`);
    said = text;
    if (cluster.provisioningStatus?.state === 'RUNNING') return cluster;
    if (cluster.provisioningStatus?.state === 'FAILED') throw new Error(`cluster ${name} failed to provision: ${text}`);
    if (Date.now() > deadline) throw new Error(`cluster ${name} was not provisioned within ${timeoutMs / 1000} s: ${text}`);
    await sleep(1_000);
  }
}

/** The deploy token the agent uses, and a rotation under way. */
function tokenState(cluster: ApiCluster): string {
  const inUse = cluster.deployTokenCreatedAt ? `made ${cluster.deployTokenCreatedAt}` : 'not used yet';
  const pending = cluster.tokenRotationRequestedAt !== null && !rotationDone(cluster);
  return pending ? `${inUse}; rotation requested ${cluster.tokenRotationRequestedAt}` : inUse;
}

function rotationDone(cluster: ApiCluster): boolean {
  return cluster.tokenRotationRequestedAt !== null && (cluster.deployTokenCreatedAt ?? '') > cluster.tokenRotationRequestedAt;
}

/**
 * The cluster once its agent uses a token made after the rotation was requested, looked at every second.
 * @throws Error after `timeoutMs`, naming the agent's last ping.
 */
async function tokenRotated(client: FleetClient, requested: ApiCluster, timeoutMs: number): Promise<ApiCluster> {
  const deadline = Date.now() + timeoutMs;
  process.stderr.write(`waiting for the agent of cluster ${requested.name} to rotate its deploy token at its next ping\n`);
  for (let cluster = requested; ; cluster = await client.getCluster(requested.name)) {
    if (rotationDone(cluster)) return cluster;
    if (Date.now() > deadline)
      throw new Error(
        `the agent of cluster ${cluster.name} did not rotate its deploy token within ${timeoutMs / 1000} s (last ping: ${cluster.pingedAt ?? 'never'})`,
      );
    await sleep(1_000);
  }
}

/** The agent's version, and the one it should move to when they differ (version skew); empty before its first ping. */
function agentState(cluster: ApiCluster): string {
  const running = cluster.agentVersion;
  return running === null || running === cluster.wantedAgentVersion ? (running ?? '') : `${running} → ${cluster.wantedAgentVersion}`;
}

function formatTags(tags: Record<string, string>): string {
  return Object.entries(tags)
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
}

function formatCluster(cluster: ApiCluster): string {
  const rows: Array<[string, string]> = [
    ['name', cluster.name],
    ['handle', cluster.handle],
    ['tags', formatTags(cluster.tags)],
    ['distro', cluster.distro ?? ''],
    ['kubernetes', cluster.kubernetesVersion ?? ''],
    ['agent', agentState(cluster)],
    ['wanted', `${cluster.wantedAgentVersion} (${cluster.agentVersionPin === null ? "the server's own" : 'pinned'})`],
    ['health', cluster.health],
    ['pinged', cluster.pingedAt ?? 'never'],
    ['created', cluster.createdAt],
    ['token', tokenState(cluster)],
    ...(cluster.provisioning
      ? ([
          ['made by', provisioningSpecText(cluster.provisioning)],
          ['provisioned', provisioningText(cluster)],
        ] as Array<[string, string]>)
      : []),
  ];
  return rows.map(([key, value]) => `${`${key}:`.padEnd(13)}${value}\n`).join('');
}
