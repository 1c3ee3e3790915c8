import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyExample, example, removeCopy, writeProject } from '../../test/support/fixtures.ts';
import { loadDeploymentItems } from './deployment-project.ts';
import { loadKluctlProject, resolveTarget } from './kluctl-project.ts';
import { parseArgs } from './args.ts';
import { testProjectEnvironment, testRenderer } from '../../test/support/engine.ts';

const pool = testRenderer({ workers: 2 });
afterAll(() => pool.close());

async function load(dir: string, target: string, args: string[] = []) {
  const project = await loadKluctlProject(dir);
  const resolved = await resolveTarget(
    project,
    { targetName: target, externalArgs: await parseArgs(args), contextOverride: undefined, defaultContext: 'ctx' },
    pool,
  );
  return {
    resolved,
    items: await loadDeploymentItems(dir, { target: resolved.templateValue, args: resolved.args }, testProjectEnvironment(pool)),
  };
}

describe('3-templating-and-multi-env', () => {
  const dir = example('microservices-demo/3-templating-and-multi-env');

  it('renders the discriminator and keeps the target context', async () => {
    const { resolved } = await load(dir, 'test');
    expect(resolved.discriminator).toBe('kluctl-examples-microservices-demo-test');
    expect(resolved.context).toBe('kind-kind');
    expect(resolved.args).toEqual({ env_type: 'real' });
  });

  it('flattens includes in order, with the barrier after namespaces', async () => {
    const { items } = await load(dir, 'test');
    expect(items.map((item) => item.relDir ?? 'barrier')).toEqual([
      'namespaces',
      'barrier',
      'third-party/redis',
      'services/adservice',
      'services/cartservice',
      'services/checkoutservice',
      'services/currencyservice',
      'services/emailservice',
      'services/frontend',
      'services/loadgenerator',
      'services/paymentservice',
      'services/productcatalogservice',
      'services/recommendationservice',
      'services/shippingservice',
    ]);
  });

  it('gives included items inherited tags, labels and overrideNamespace', async () => {
    const { items } = await load(dir, 'test');
    const frontend = items.find((item) => item.relDir === 'services/frontend');
    expect(frontend?.tags).toEqual(['services', 'frontend']);
    expect(frontend?.overrideNamespace).toBe('ms-demo-test');
    expect(frontend?.commonLabels).toEqual({
      'examples.kluctl.io/deployment-project': 'microservices-demo',
      'examples.kluctl.io/deployment-target': 'test',
    });
  });

  it('loads the vars file chosen by an arg, and -a overrides the target arg', async () => {
    const { items } = await load(dir, 'test', ['env_type=local']);
    expect(items.map((item) => item.relDir)).not.toContain('services/emailservice');
    expect(items.map((item) => item.relDir)).not.toContain('services/loadgenerator');
    expect(items[0]?.context['redis']).toEqual({ architecture: 'standalone', svcName: 'cart-redis-master' });
  });
});

describe('bad input', () => {
  it('names the unknown target and the known ones', async () => {
    await expect(load(example('microservices-demo/3-templating-and-multi-env'), 'nope')).rejects.toThrow(
      /target 'nope' not found.*local, test, prod/,
    );
  });

  it('names a missing vars file', async () => {
    await expect(load(example('microservices-demo/3-templating-and-multi-env'), 'test', ['env_type=missing'])).rejects.toThrow(
      /deployment\.yml: vars\[0\]: vars file '.\/vars\/missing\.yml' not found/,
    );
  });

  it('names file and line of a template error', async () => {
    const dir = await copyExample('microservices-demo/3-templating-and-multi-env');
    try {
      await writeFile(
        path.join(dir, 'services/deployment.yml'),
        'deployments:\n  - path: adservice\n  {% if services.nothing.enabled %}\n  - path: x\n  {% endif %}\n',
      );
      await expect(load(dir, 'test')).rejects.toThrow(/services\/deployment\.yml:3: .*nothing/);
    } finally {
      await removeCopy(dir);
    }
  });

  it('names file and line of invalid YAML', async () => {
    const dir = await copyExample('microservices-demo/3-templating-and-multi-env');
    try {
      await writeFile(path.join(dir, 'third-party/deployment.yml'), 'deployments:\n  - path: redis\n   bad: [\n');
      await expect(load(dir, 'test')).rejects.toThrow(/third-party\/deployment\.yml:3: invalid YAML/);
    } finally {
      await removeCopy(dir);
    }
  });

  it('rejects an unknown key instead of ignoring it', async () => {
    const dir = await copyExample('microservices-demo/3-templating-and-multi-env');
    try {
      await writeFile(path.join(dir, 'third-party/deployment.yml'), 'deployments:\n  - pathh: redis\n');
      await expect(load(dir, 'test')).rejects.toThrow(/third-party\/deployment\.yml: deployments\[0\]: unknown field 'pathh'/);
    } finally {
      await removeCopy(dir);
    }
  });

  it('refuses a project including itself (the deployment fuzzer found `include: ""` loading forever)', async () => {
    const dir = await copyExample('microservices-demo/3-templating-and-multi-env');
    try {
      await writeFile(path.join(dir, 'third-party/deployment.yml'), 'deployments:\n  - include: ""\n');
      await expect(load(dir, 'test')).rejects.toThrow(
        /third-party\/deployment\.yml: deployments\[0\]: includes nest more than 32 deep \(does '' include a project that includes it\?\)/,
      );
    } finally {
      await removeCopy(dir);
    }
  });

  it('rejects an item folder outside the project', async () => {
    const dir = await copyExample('microservices-demo/3-templating-and-multi-env');
    try {
      await writeFile(path.join(dir, 'third-party/deployment.yml'), 'deployments:\n  - path: ../../etc\n');
      await expect(load(dir, 'test')).rejects.toThrow(/'..\/..\/etc' is outside the project/);
    } finally {
      await removeCopy(dir);
    }
  });
});

describe('a target whose fields include themselves', () => {
  it('is refused naming .kluctl.yaml once a pass grows too large, instead of growing until memory runs out', async () => {
    const dir = await writeProject({
      '.kluctl.yaml':
        'discriminator: d\ntargets:\n  - name: t\n    args:\n      a.b: "{{ args | tojson }}"\n      "{{ args | tojson }}": "x"\n',
      'deployment.yaml': 'deployments: []\n',
    });
    try {
      await expect(load(dir, 't')).rejects.toThrow(/\.kluctl\.yaml: .*(the rendered text is larger than 64 MiB|larger than 1 MiB)/);
    } finally {
      await removeCopy(dir);
    }
  });
});
