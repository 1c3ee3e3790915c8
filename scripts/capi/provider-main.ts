/**
 * `node scripts/capi/provider-main.ts --kubeconfig FILE --health-port PORT`: runs the test's Cluster API provider
 * (provider.ts) against the management cluster until SIGTERM, with /readyz on 127.0.0.1:PORT. scripts/capi/capi.ts
 * starts it beside Cluster API's own controllers.
 */
import { parseArgs } from 'node:util';
import { Cluster } from '../../src/kube/cluster.ts';
import { createLogger } from '../../src/logger.ts';
import { runController } from '../../src/reconcile/manager.ts';
import { CONTROL_PLANE_GROUP, INFRASTRUCTURE_GROUP, PROVIDER_VERSION } from './provider-crds.ts';
import { reconcileControlPlane, reconcileInfraCluster } from './provider.ts';

const { values } = parseArgs({ options: { kubeconfig: { type: 'string' }, 'health-port': { type: 'string' } } });
if (!values.kubeconfig || !values['health-port']) throw new Error('usage: provider-main.ts --kubeconfig FILE --health-port PORT');
const log = createLogger();
const cluster = Cluster.connect({ kubeconfig: values.kubeconfig });
const context = { cluster, log };
const controllers = [
  await runController({
    cluster,
    resource: { group: INFRASTRUCTURE_GROUP, version: PROVIDER_VERSION, plural: 'localclusters' },
    workers: 2,
    server: { host: '127.0.0.1', port: Number(values['health-port']) },
    logger: log.child({ controller: 'localcluster' }),
    reconcile: async (_key, object) => {
      if (object) await reconcileInfraCluster(object, context);
    },
  }),
  await runController({
    cluster,
    resource: { group: CONTROL_PLANE_GROUP, version: PROVIDER_VERSION, plural: 'localcontrolplanes' },
    // Each start of a cluster takes seconds of waiting: several at once, as a cloud provisions machines in parallel.
    workers: 4,
    logger: log.child({ controller: 'localcontrolplane' }),
    reconcile: async (_key, object, _signal, reconcile) => {
      if (!object) return;
      const requeueAfterMs = await reconcileControlPlane(object, { ...context, log: reconcile.log });
      return requeueAfterMs === undefined ? undefined : { requeueAfterMs };
    },
  }),
];
log.info('local Cluster API provider running');
process.once('SIGTERM', () => {
  void Promise.all(controllers.map((controller) => controller.stop())).then(() => process.exit(0));
});
