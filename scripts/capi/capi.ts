/**
 * Cluster API on a local cluster, which becomes a management cluster: Cluster API's core CRDs and admission webhooks
 * and its core controllers (`cluster-api-manager`, built by setup from sigs.k8s.io/cluster-api), as `clusterctl init`
 * installs them, plus the test's local provider (provider.ts) for infrastructure and control plane. Both run as
 * components of the cluster (see startAddOns), so `npm run cluster -- down` stops them with it.
 *
 * What differs from a cluster's own install, and why: no cert-manager and no Service in front of the webhooks — the
 * API server reaches them by URL on 127.0.0.1 with a self-signed certificate made here; no RBAC — both run with the
 * cluster's admin kubeconfig. Cluster API's webhook server has no flag for its address, so it listens on every
 * interface, on a free port.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import selfsigned from 'selfsigned';
import { run } from '../../src/exec.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { freePorts } from '../../src/ports.ts';
import { parseYamlDocuments, toYamlDocuments } from '../../src/yaml.ts';
import { type ClusterOptions, type ClusterState, clusterUp, startAddOns } from '../cluster/cluster.ts';
import { clusterLayout, type ClusterLayout } from '../cluster/layout.ts';
import { answersOk } from '../cluster/readiness.ts';
import { CLUSTER_API_CORE_CRDS, CLUSTER_API_WEBHOOKS_FILE, crdFileName } from '../setup/tools.ts';
import { providerCrds } from './provider-crds.ts';

const MANAGER = 'cluster-api-manager';
const PROVIDER = 'local-capi-provider';
const PROVIDER_MAIN = new URL('provider-main.ts', import.meta.url).pathname;
const NODE = new URL('../../node_modules/.bin/node', import.meta.url).pathname;

/**
 * Makes the cluster (started when it is not running) a management cluster; cheap when it already is one.
 * @returns the cluster's state, with Cluster API's components among its components.
 * @throws Error naming the step that failed (and the log to read).
 */
export async function capiUp(options: ClusterOptions = {}): Promise<ClusterState> {
  const layout = options.layout ?? clusterLayout();
  const report = options.report ?? (() => {});
  const state = await clusterUp({ layout, report });
  const kubectl = (args: string[], input?: string) =>
    run(join(layout.bin, 'kubectl'), [`--kubeconfig=${state.kubeconfig}`, ...args], { input });
  const crds = [...CLUSTER_API_CORE_CRDS.map(crdFileName), ...providerCrds().map((crd) => `${crd.metadata.name}.yaml`)];
  report('installing the Cluster API CRDs');
  await kubectl([
    'apply',
    '--server-side',
    '--force-conflicts',
    '--field-manager=gantry-capi-up',
    ...CLUSTER_API_CORE_CRDS.flatMap((crd) => ['-f', join(layout.crds, crdFileName(crd))]),
  ]);
  await kubectl(
    ['apply', '--server-side', '--force-conflicts', '--field-manager=gantry-capi-up', '-f', '-'],
    toYamlDocuments(providerCrds()),
  );
  await kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...crds.map((file) => `crd/${file.replace(/\.yaml$/, '')}`)]);
  return await startAddOns(layout, [MANAGER, PROVIDER], async () => await capiComponents(layout, state, kubectl), report);
}

/** The two components, after their webhook configurations point at the manager's new port. */
async function capiComponents(
  layout: ClusterLayout,
  state: ClusterState,
  kubectl: (args: string[], input?: string) => Promise<unknown>,
): Promise<Array<{ name: string; program: string; args: string[]; ready: () => Promise<boolean> }>> {
  const ports = await freePorts(['webhook', 'health', 'diagnostics', 'providerHealth'] as const);
  const certDir = join(layout.data, 'capi-webhook');
  const ca = await writeServingCertificate(certDir);
  await kubectl(
    ['apply', '--server-side', '--force-conflicts', '--field-manager=gantry-capi-up', '-f', '-'],
    toYamlDocuments(await webhookConfigurations(layout, ports.webhook, ca)),
  );
  return [
    {
      name: MANAGER,
      program: join(layout.bin, MANAGER),
      args: [
        `--kubeconfig=${state.kubeconfig}`,
        '--feature-gates=ClusterTopology=true',
        `--webhook-port=${ports.webhook}`,
        `--webhook-cert-dir=${certDir}`,
        `--health-addr=127.0.0.1:${ports.health}`,
        `--diagnostics-address=127.0.0.1:${ports.diagnostics}`,
        '--insecure-diagnostics',
      ],
      ready: () => answersOk(`http://127.0.0.1:${ports.health}/readyz`),
    },
    {
      name: PROVIDER,
      program: NODE,
      args: [PROVIDER_MAIN, '--kubeconfig', state.kubeconfig, '--health-port', String(ports.providerHealth)],
      ready: () => answersOk(`http://127.0.0.1:${ports.providerHealth}/readyz`),
    },
  ];
}

/** Cluster API core's webhook configurations (its config/webhook), reaching the manager by URL instead of a Service. */
async function webhookConfigurations(layout: ClusterLayout, port: number, caPem: string): Promise<KubeObject[]> {
  const documents = parseYamlDocuments(
    await readFile(join(layout.crds, CLUSTER_API_WEBHOOKS_FILE), 'utf8'),
    CLUSTER_API_WEBHOOKS_FILE,
  ) as KubeObject[];
  return documents.map((configuration) => ({
    ...configuration,
    metadata: { name: `capi-${configuration.metadata.name}` },
    webhooks: (configuration['webhooks'] as Array<{ clientConfig: { service: { path: string } } }>).map((webhook) => ({
      ...webhook,
      clientConfig: {
        url: `https://127.0.0.1:${port}${webhook.clientConfig.service.path}`,
        caBundle: Buffer.from(caPem).toString('base64'),
      },
    })),
  }));
}

/** A self-signed certificate for 127.0.0.1 as tls.crt and tls.key, made once per cluster start; returns it as the CA. */
async function writeServingCertificate(dir: string): Promise<string> {
  const existing = await readFile(join(dir, 'tls.crt'), 'utf8').catch(() => undefined);
  if (existing) return existing;
  const pems = await selfsigned.generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keyType: 'ec',
    notAfterDate: new Date(Date.now() + 365 * 86_400_000),
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(join(dir, 'tls.key'), pems.private, { mode: 0o600 });
  await writeFile(join(dir, 'tls.crt'), pems.cert);
  return pems.cert;
}
