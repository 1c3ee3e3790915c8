/**
 * The controller's log for the gitops commands, as kluctl's (cmd_gitops_logs.go, cmd_gitops.go): `gantry gitops
 * logs` prints the lines of the selected KluctlDeployments (or, with --all, every line) from the last --log-since,
 * and with -f keeps following; a request command follows the lines of the reconcile that serves its request until
 * the controller logs that the request finished. Log lines go to stdout for `logs` (`-o json`: each line's JSON
 * object, one per line) and to stderr beside the progress for a request, whose stdout holds its result.
 */
import { Command } from 'commander';
import { selectDeployments, deploymentKey } from '../gitops/requests.ts';
import {
  controllerPods,
  DEFAULT_CONTROLLER_NAMESPACE,
  formatLogLine,
  readControllerLogs,
  type ControllerLogLine,
  type ControllerPod,
} from '../gitops/controller-logs.ts';
import type { ManualRequestResult, RequestKind } from '../api/kluctl-deployment.ts';
import { parseDuration } from '../duration.ts';
import { Cluster } from '../kube/cluster.ts';
import type { Progress } from '../progress.ts';
import { sleep } from '../sleep.ts';
import { messageOf } from '../problems.ts';

/** The log flags every gitops command has, as kluctl's GitOpsArgs and GitOpsLogArgs. */
export interface LogFlags {
  controllerNamespace: string;
  logSince: string;
  logTime?: boolean;
}

interface LogsCommandFlags extends LogFlags {
  namespace?: string;
  name?: string;
  labelSelector?: string;
  all?: boolean;
  kubeconfig?: string;
  context?: string;
  reconcileId?: string;
  follow?: boolean;
  output: string;
}

/**
 * How long a request waits for the controller's last line of it once the status says it finished: that line was
 * logged first, but it reaches the API server through the kubelet's log file, a moment later.
 */
const LAST_LINE_WAIT_MS = 2000;

export function addLogFlags(command: Command): Command {
  return command
    .option('--controller-namespace <namespace>', 'namespace the controller runs in', DEFAULT_CONTROLLER_NAMESPACE)
    .option('--log-since <duration>', "show the controller's log lines since this long ago", '1m')
    .option('--log-time', 'print the time of each log line');
}

export function logsCommand(): Command {
  const command = addLogFlags(
    new Command('logs').description("print the controller's log lines of KluctlDeployments (-f: and keep following)"),
  )
    .option('-n, --namespace <namespace>', "namespace of the KluctlDeployments (the kubeconfig context's namespace when omitted)")
    .option('--name <name>', 'name of the KluctlDeployment')
    .option('-l, --label-selector <selector>', 'all KluctlDeployments of the namespace matching this label selector')
    .option('--all', "every line of the controller's log, of all KluctlDeployments and of none")
    .option('--reconcile-id <id>', 'only the lines of this reconcile (status.<kind>RequestResult.reconcileId)')
    .option('-f, --follow', 'keep printing new lines until interrupted')
    .option('--kubeconfig <file>', 'kubeconfig to use instead of $KUBECONFIG / ~/.kube/config')
    .option('--context <name>', 'kubeconfig context of the cluster the controller runs in')
    .option('-o, --output <format>', "text, or json: each log line's JSON object, one per line", 'text');
  return command.action(async (flags: LogsCommandFlags) => {
    try {
      await printLogs(flags);
    } catch (error) {
      process.stderr.write(`error: ${messageOf(error)}\n`);
      process.exitCode = 1;
    }
  });
}

async function printLogs(flags: LogsCommandFlags): Promise<void> {
  if (flags.output !== 'text' && flags.output !== 'json') throw new Error(`-o ${flags.output}: use text or json`);
  if (!flags.all && !flags.name && !flags.labelSelector) throw new Error('pass --name (with -n/--namespace), -l/--label-selector or --all');
  if (flags.all && (flags.name || flags.labelSelector))
    throw new Error('--all shows every line: pass no --name or -l/--label-selector with it');
  const sinceSeconds = parseDuration(flags.logSince) / 1000;
  const cluster = Cluster.connect({ kubeconfig: flags.kubeconfig, context: flags.context });
  const deployments = flags.all
    ? undefined
    : new Set(
        (await selectDeployments(cluster, { namespace: flags.namespace, name: flags.name, labelSelector: flags.labelSelector })).map(
          deploymentKey,
        ),
      );
  const pods = await controllerPods(cluster, flags.controllerNamespace);
  if (pods.length === 0) {
    throw new Error(
      `no controller Pods (label app.kubernetes.io/name=gantry-controller) in namespace ${flags.controllerNamespace}: is the controller running in this cluster? (--controller-namespace)`,
    );
  }
  const print =
    flags.output === 'json'
      ? (line: ControllerLogLine) => process.stdout.write(`${JSON.stringify(line)}\n`)
      : textPrinter(flags.logTime === true);
  await readControllerLogs(
    cluster,
    pods,
    { sinceSeconds, follow: flags.follow === true, filter: { deployments, reconcileId: flags.reconcileId } },
    print,
  );
}

/** Prints lines, and on stderr which deployment and reconcile the next ones belong to whenever that changes, as kluctl. */
function textPrinter(withTime: boolean): (line: ControllerLogLine) => void {
  let shown: string | undefined;
  return (line) => {
    const about = line.reconcileID ? `${line.namespace}/${line.name} and reconcile ${line.reconcileID}` : '';
    if (about !== shown) process.stderr.write(about ? `showing logs for ${about}\n` : 'showing general controller logs\n');
    shown = about;
    process.stdout.write(`${formatLogLine(line, withTime)}\n`);
  };
}

/**
 * The controller's log lines of one request, printed on `progress` while the request runs: `start` when the
 * controller took it up, `finish` once it ended (waits for the request's last line, at most LAST_LINE_WAIT_MS).
 * Without controller Pods to read (a controller out of cluster, no rights) nothing is shown, and `showing` says so.
 */
export class RequestLog {
  private readonly stop = new AbortController();
  private readonly cluster: Cluster;
  private readonly pods: readonly ControllerPod[];
  private readonly flags: LogFlags;
  private readonly progress: Progress;
  private reading: Promise<void> | undefined;
  private failed = false;

  private constructor(cluster: Cluster, pods: readonly ControllerPod[], flags: LogFlags, progress: Progress) {
    this.cluster = cluster;
    this.pods = pods;
    this.flags = flags;
    this.progress = progress;
  }

  /** Finds the controller's Pods; a failure to list them is reported on `progress` and leaves none. */
  static async open(cluster: Cluster, flags: LogFlags, progress: Progress, scope: string): Promise<RequestLog> {
    const pods = await controllerPods(cluster, flags.controllerNamespace).catch((error: unknown) => {
      progress.step(scope, `the controller's log is not shown: ${messageOf(error)}`);
      return [];
    });
    return new RequestLog(cluster, pods, flags, progress);
  }

  /** Whether the controller's lines are shown (so its status messages need not be). */
  get showing(): boolean {
    return this.pods.length > 0 && !this.failed;
  }

  start(deployment: string, kind: RequestKind, result: ManualRequestResult): void {
    if (!this.showing) return;
    const finished = (line: ControllerLogLine) => line['requestFinished'] === kind && line['requestValue'] === result.request.requestValue;
    this.reading = readControllerLogs(
      this.cluster,
      this.pods,
      {
        sinceSeconds: parseDuration(this.flags.logSince) / 1000,
        follow: true,
        filter: { deployments: new Set([deployment]), reconcileId: result.reconcileId },
        until: finished,
        signal: this.stop.signal,
      },
      (line) => this.progress.step(deployment, formatLogLine(line, this.flags.logTime === true)),
    ).catch((error: unknown) => {
      this.failed = true;
      if (!this.stop.signal.aborted) this.progress.step(deployment, messageOf(error));
    });
  }

  async finish(): Promise<void> {
    const waited = new AbortController();
    if (this.reading) await Promise.race([this.reading, sleep(LAST_LINE_WAIT_MS, waited.signal).catch(() => undefined)]);
    waited.abort();
    this.stop.abort();
    await this.reading;
  }
}
