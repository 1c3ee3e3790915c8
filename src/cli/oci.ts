/**
 * `gantry oci push`, as kluctl's (cmd/kluctl/commands/cmd_oci_push.go, docs/kluctl/commands/oci-push.md): packs the
 * project folder as an OCI artifact (src/source/oci-artifact.ts) and pushes it to `--url oci://host/repo[:tag]`
 * (tag `latest` when none), with `--annotation key=value`s, the registry flags' credentials (then
 * `KLUCTL_REGISTRY_*`, then docker's config.json) and an overall `--timeout`. Progress goes to stderr; `-o json` or
 * `-o yaml` prints {url, repository, tag, digest} with url `oci://host/repo@sha256:…`, as kluctl prints it.
 */
import path from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { OciClient, parseOciUrl } from '../source/oci-client.ts';
import { artifactAnnotations, gitInfoOf, packProject, pushProject } from '../source/oci-artifact.ts';
import { isDirectory } from '../files.ts';
import type { Tools } from '../tools.ts';
import { toYaml } from '../yaml.ts';
import { addRegistryFlags, cliRegistryCredentials, type RegistryFlags } from './oci-registry-flags.ts';
import { durationArg } from './options.ts';
import { withCliEngine } from './run-action.ts';

interface OciPushFlags extends RegistryFlags {
  url: string;
  projectDir: string;
  annotation: Record<string, string>;
  output?: 'json' | 'yaml';
  timeout: number;
}

/** What `-o json|yaml` prints (kluctl's field names). */
interface OciPushResult {
  /** `oci://host/repo@sha256:…`. */
  url: string;
  /** `host/repo`. */
  repository: string;
  tag: string;
  digest: string;
}

export function ociCommand(): Command {
  const oci = new Command('oci');
  oci.addCommand(pushCommand());
  return oci;
}

function pushCommand(): Command {
  const command = new Command('push')
    .description('pack the project folder as an OCI artifact and push it to an OCI repository')
    .requiredOption('--url <oci-url>', 'the artifact URL, oci://<host>/<repository>[:<tag>] (tag latest when none)')
    .option('--project-dir <dir>', 'folder of the Kluctl project', '.')
    .option('--annotation <key=value>', 'an OCI annotation of the artifact (repeatable)', annotationArg, {})
    .addOption(new Option('-o, --output <format>', 'print {url, repository, tag, digest} instead of progress').choices(['json', 'yaml']))
    .option('--timeout <duration>', 'limit of the whole push', durationArg, 10 * 60_000);
  addRegistryFlags(command).action((flags: OciPushFlags) =>
    withCliEngine(async ({ engine, progress }) => {
      const result = await ociPush(flags, { tools: engine.tools, progress: (message) => progress.step('oci', message) });
      if (flags.output === 'json') process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      else if (flags.output === 'yaml') process.stdout.write(toYaml(result));
    }),
  );
  return command;
}

/**
 * Packs and pushes as the flags say.
 * @throws Error naming the folder that is no project folder, the malformed URL, or (prefixed `pushing artifact
 *   failed`) the registry's refusal with the URL, never a credential.
 */
async function ociPush(flags: OciPushFlags, context: { tools: Tools; progress: (message: string) => void }): Promise<OciPushResult> {
  const reference = parseOciUrl(flags.url);
  if (reference.digest) throw new Error(`--url ${flags.url}: push to a tag, not a digest`);
  const tag = reference.tag ?? 'latest';
  const dir = path.resolve(flags.projectDir);
  if (!(await isDirectory(dir))) throw new Error(`invalid path '${flags.projectDir}', must point to an existing project`);
  const credentials = await cliRegistryCredentials(flags);
  const signal = AbortSignal.timeout(flags.timeout);
  context.progress(`Pushing artifact to ${flags.url}`);
  const packed = await packProject(dir);
  const annotations = artifactAnnotations(await gitInfoOf(dir, context.tools), new Date(), flags.annotation);
  const client = new OciClient(reference, credentials.find(reference.registry, reference.repository), 'push', signal);
  try {
    const digest = await pushProject(client, tag, packed, annotations).catch((error: Error) => {
      throw new Error(`pushing artifact failed: ${signal.aborted ? `timed out after ${flags.timeout / 1000}s` : error.message}`);
    });
    const name = `${reference.registry}/${reference.repository}`;
    context.progress(`Artifact successfully pushed to ${name}@${digest}`);
    return { url: `oci://${name}@${digest}`, repository: name, tag, digest } satisfies OciPushResult;
  } finally {
    await client.close();
  }
}

/** `key=value` (exactly one `=`, as kluctl requires) into the map of annotations. */
function annotationArg(text: string, previous: Record<string, string>): Record<string, string> {
  const parts = text.split('=');
  if (parts.length !== 2) throw new InvalidArgumentError(`invalid annotation ${text}, must be in the format key=value`);
  return { ...previous, [parts[0]!]: parts[1]! };
}
