import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import type { V1NetworkPolicy, V1NetworkPolicyPeer, V1Role, V1Secret } from '@kubernetes/client-node';
import type { V1ConfigMap, V1Container, V1Deployment } from '@kubernetes/client-node';
import { parseRunConfig } from '../../src/config/run.js';
import { numberRules } from '../../src/config/run-rules.js';
import { kubeRunnerConfigSchema } from '../../src/rollouts/kube-config.js';
import { buildRolloutJob } from '../../src/rollouts/kube-job.js';
import { rolloutSpecSchema } from '../../src/rollouts/spec.js';
import { specFor } from '../rollouts/fixtures.js';
import { chartDir, chartDocs, helm, renderChart, type Doc } from './chart.js';

/** The kubernetes-models class for a document's apiVersion and kind, e.g. networking.k8s.io/v1 NetworkPolicy. */
async function modelFor(doc: Doc): Promise<new (d: unknown) => { validate(): void }> {
  const mod = (await import(`kubernetes-models/${doc.apiVersion}/${doc.kind}`)) as Record<string, unknown>;
  return mod[doc.kind] as new (d: unknown) => { validate(): void };
}

/** Every document validated against the Kubernetes schema (kubernetes-models), each named by its kind and name. */
async function validateAll(docs: Doc[]): Promise<void> {
  for (const doc of docs) {
    assert.ok(doc.apiVersion && doc.kind, `a document without apiVersion/kind: ${JSON.stringify(doc).slice(0, 200)}`);
    const Model = await modelFor(doc);
    assert.doesNotThrow(() => new Model(doc).validate(), `${doc.kind}/${doc.metadata.name}`);
  }
}

/** Each namespaced object lands in a namespace the chart defines. */
function assertNamespaces(docs: Doc[]): void {
  const namespaces = new Set(docs.filter((d) => d.kind === 'Namespace').map((d) => d.metadata.name));
  for (const doc of docs.filter((d) => d.metadata.namespace))
    assert.ok(
      namespaces.has(doc.metadata.namespace!),
      `${doc.kind}/${doc.metadata.name}: unknown namespace ${doc.metadata.namespace}`,
    );
}

void describe('the Helm chart (deploy/helm/volt), rendered by the real helm binary', () => {
  const rendered = chartDocs();
  const docs = rendered.map((doc) => ({ file: `${doc.kind}/${doc.metadata.name}`, doc }));
  const find = <T>(kind: string, name: string) =>
    docs.find((d) => d.doc.kind === kind && d.doc.metadata.name === name)?.doc as T | undefined;

  void it('passes helm lint --strict', () => {
    const lint = spawnSync(helm, ['lint', '--strict', chartDir], { encoding: 'utf8' });
    assert.equal(lint.error, undefined, `${helm} did not run (scripts/setup.sh installs helm-binary)`);
    assert.equal(lint.status, 0, lint.stdout + lint.stderr);
  });

  void it('renders objects that pass Kubernetes schema validation', async () => {
    assert.ok(rendered.length >= 20, `only ${rendered.length} documents rendered`);
    await validateAll(rendered);
  });

  void it('puts every namespaced object into a namespace the chart defines', () => assertNamespaces(rendered));

  void it('give every Service pods to select, and every workload a selector matching its own template', () => {
    type Workload = Doc & {
      spec: {
        selector: { matchLabels: Record<string, string> };
        template: { metadata: { labels: Record<string, string> } };
      };
    };
    const workloads = docs
      .map((d) => d.doc)
      .filter((d): d is Workload => ['Deployment', 'StatefulSet'].includes(d.kind));
    const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
      Object.entries(selector).every(([k, v]) => labels[k] === v);
    for (const w of workloads)
      assert.ok(matches(w.spec.selector.matchLabels, w.spec.template.metadata.labels), `${w.metadata.name}: selector`);
    for (const svc of docs.map((d) => d.doc).filter((d) => d.kind === 'Service') as (Doc & {
      spec: { selector: Record<string, string> };
    })[]) {
      assert.ok(
        workloads.some(
          (w) =>
            w.metadata.namespace === svc.metadata.namespace &&
            matches(svc.spec.selector, w.spec.template.metadata.labels),
        ),
        `Service ${svc.metadata.name} selects no pods`,
      );
    }
  });

  void it('enforce the restricted Pod Security profile on the namespace the runner uses by default', () => {
    const ns = kubeRunnerConfigSchema.parse({ image: 'x' }).namespace;
    assert.equal(find<Doc>('Namespace', ns)?.metadata.labels?.['pod-security.kubernetes.io/enforce'], 'restricted');
  });

  void it('grant the runner exactly the calls KubeRunner makes, and no secrets', () => {
    const role = find<V1Role>('Role', 'volt-rollout-runner');
    const verbs = (resource: string) =>
      role?.rules?.filter((r) => r.resources?.includes(resource)).flatMap((r) => r.verbs) ?? [];
    assert.deepEqual(verbs('jobs').sort(), ['create', 'delete', 'get', 'list', 'watch']);
    assert.deepEqual(verbs('pods').sort(), ['get', 'list', 'watch']);
    assert.deepEqual(verbs('pods/log'), ['get']);
    assert.ok(
      !role?.rules?.some((r) => r.resources?.some((x) => x === '*' || x === 'secrets') || r.verbs.includes('*')),
    );
  });

  void it('deny all traffic by default and let rollout pods (as the runner labels them) reach only the gateway and DNS', () => {
    const deny = find<V1NetworkPolicy>('NetworkPolicy', 'default-deny');
    assert.deepEqual(deny?.spec?.podSelector, {});
    assert.deepEqual(deny?.spec?.policyTypes, ['Ingress', 'Egress']);
    assert.equal(deny?.spec?.ingress, undefined);
    assert.equal(deny?.spec?.egress, undefined);
    const allow = find<V1NetworkPolicy>('NetworkPolicy', 'rollouts-to-gateway-and-dns');
    const job = buildRolloutJob(rolloutSpecSchema.parse(specFor(['a'])), kubeRunnerConfigSchema.parse({ image: 'x' }));
    const podLabels = job.spec?.template.metadata?.labels ?? {};
    for (const [k, v] of Object.entries(allow?.spec?.podSelector?.matchLabels ?? {}))
      assert.equal(podLabels[k], v, `pods lack ${k}=${v}`);
    const ports = allow?.spec?.egress?.flatMap((e) => e.ports?.map((p) => `${p.protocol}/${p.port}`) ?? []);
    assert.deepEqual(ports, ['TCP/8400', 'UDP/53', 'TCP/53']);
  });

  void it('let Prometheus reach the gateway port (its /metrics) and nothing else into the gateway', () => {
    const policy = find<V1NetworkPolicy>('NetworkPolicy', 'gateway-ingress');
    const rules = policy?.spec?.ingress ?? [];
    assert.equal(rules.length, 1);
    // The manifests are parsed YAML, not client-node models: the peers are under `from` (the model calls it `_from`).
    const peers = (rules[0] as { from?: V1NetworkPolicyPeer[] } | undefined)?.from ?? [];
    assert.ok(
      peers.some(
        (p) =>
          p.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] === 'monitoring' &&
          p.podSelector?.matchLabels?.['app.kubernetes.io/name'] === 'prometheus',
      ),
      'Prometheus is a peer',
    );
    assert.deepEqual(
      rules[0]?.ports?.map((p) => `${p.protocol}/${p.port}`),
      ['TCP/8400'],
    );
  });

  void it('define every PersistentVolumeClaim a workload mounts by name', () => {
    type Pods = Doc & {
      spec: { template: { spec: { volumes?: { persistentVolumeClaim?: { claimName: string } }[] } } };
    };
    const claims = new Set(
      docs
        .filter((d) => d.doc.kind === 'PersistentVolumeClaim')
        .map((d) => `${d.doc.metadata.namespace}/${d.doc.metadata.name}`),
    );
    const workloads = docs.map((d) => d.doc).filter((d): d is Pods => ['Deployment', 'StatefulSet'].includes(d.kind));
    for (const w of workloads)
      for (const v of w.spec.template.spec.volumes ?? [])
        if (v.persistentVolumeClaim)
          assert.ok(
            claims.has(`${w.metadata.namespace}/${v.persistentVolumeClaim.claimName}`),
            `${w.metadata.name}: claim ${v.persistentVolumeClaim.claimName} is not defined by the chart`,
          );
  });

  void it('let the model server load an adapter of any rank the run config allows', () => {
    type Pods = Doc & { spec: { template: { spec: { containers: { args?: string[] }[] } } } };
    const vllm = find<Pods>('Deployment', 'volt-model-server')?.spec.template.spec.containers[0];
    const rank = Number(
      /^--max-lora-rank=(\d+)$/.exec(vllm?.args?.find((a) => a.startsWith('--max-lora-rank=')) ?? '')?.[1],
    );
    assert.ok(rank >= numberRules['model.lora.rank'].max, `--max-lora-rank=${rank}`);
  });

  void it('serve under the name run configs use, parse tool calls, and take adapters from the store, behind one key', () => {
    const pod = find<V1Deployment>('Deployment', 'volt-model-server')?.spec?.template.spec;
    const byName = (name: string) => pod?.containers.find((c) => c.name === name) as V1Container;
    const [vllm, loader] = [byName('vllm'), byName('adapter-loader')];
    const args = vllm.args ?? [];
    const base = parseRunConfig({
      runId: 'r',
      agent: { command: ['true'] },
      tasks: { trainFile: 't.jsonl', evalFile: 'e.jsonl' },
      reward: { kind: 'numeric_match' },
    }).model.base;
    assert.ok(args.includes(`--served-model-name=${base}`), `vLLM serves ${base}, the default model.base`);
    assert.ok(args.includes('--enable-auto-tool-choice'), 'requests with tools are accepted');
    assert.ok(args.some((a) => /^--tool-call-parser=\S+$/.test(a)));
    assert.ok(args.includes('--enable-prefix-caching'));
    // The loader unpacks into the volume vLLM reads, at the path it sends vLLM.
    const dir = loader.command?.[loader.command.indexOf('--dir') + 1];
    const mount = (c: V1Container) => c.volumeMounts?.find((m) => m.mountPath === dir)?.name;
    assert.ok(dir && mount(vllm) && mount(vllm) === mount(loader), `vLLM mounts the loader's ${dir}`);
    assert.ok(pod?.volumes?.find((v) => v.name === mount(vllm))?.emptyDir, 'no shared disk: a volume of the pod');
    // One secret is vLLM's API key, the loader's admin key, what the gateway sends and what the workers send.
    const secretOf = (c: V1Container, name: string) =>
      c.env?.find((e) => e.name === name)?.valueFrom?.secretKeyRef?.name;
    const secret = secretOf(vllm, 'VLLM_API_KEY');
    assert.ok(secret);
    assert.equal(secretOf(loader, 'VOLT_MODEL_SERVER_ADMIN_KEY'), secret);
    const volt = (name: string) =>
      find<V1Deployment>('Deployment', name)?.spec?.template.spec?.containers[0] as V1Container;
    assert.equal(secretOf(volt('volt-gateway'), 'VOLT_MODEL_SERVER_API_KEY'), secret);
    for (const w of ['volt-worker-cpu', 'volt-worker-gpu'])
      assert.equal(secretOf(volt(w), 'VOLT_MODEL_SERVER_ADMIN_KEY'), secret, w);
    // Workers reach the loader through the Service; the gateway reaches vLLM.
    const env = find<V1ConfigMap>('ConfigMap', 'volt-env')?.data ?? {};
    assert.equal(env.VOLT_ADAPTER_SOURCE, 'store');
    type Svc = Doc & { spec: { ports: { port: number; targetPort: number }[] } };
    const service = find<Svc>('Service', 'volt-model-server');
    const target = (url: string | undefined) =>
      service?.spec.ports.find((p) => p.port === Number(new URL(url ?? '').port))?.targetPort;
    assert.equal(target(env.VOLT_MODEL_SERVER_CONTROL_URL), loader.ports?.[0]?.containerPort);
    assert.equal(target(env.VOLT_MODEL_SERVER_URL), vllm.ports?.[0]?.containerPort);
  });

  void it('serves the dashboard on all interfaces at the port of VOLT_DASHBOARD_URL, behind its token', () => {
    const env = find<V1ConfigMap>('ConfigMap', 'volt-env')?.data ?? {};
    const port = Number(new URL(env.VOLT_DASHBOARD_URL ?? '').port);
    const pod = find<V1Deployment>('Deployment', 'volt-dashboard')?.spec?.template.spec;
    const c = pod?.containers[0] as V1Container;
    assert.deepEqual(c.command, ['node', 'bin/volt.mjs', 'dashboard']);
    assert.equal(c.env?.find((e) => e.name === 'VOLT_DASHBOARD_LISTEN_HOST')?.value, '0.0.0.0');
    assert.equal(c.env?.find((e) => e.name === 'VOLT_DASHBOARD_TOKEN')?.valueFrom?.secretKeyRef?.optional, undefined);
    assert.deepEqual(
      c.ports?.map((p) => p.containerPort),
      [port],
    );
    type Svc = Doc & { spec: { ports: { port: number; targetPort: number }[] } };
    assert.deepEqual(
      find<Svc>('Service', 'volt-dashboard')?.spec.ports.map((p) => [p.port, p.targetPort]),
      [[port, port]],
    );
  });
});

void describe('the Helm chart with non-default values', () => {
  const keys = {
    'secrets.s3.accessKey': 'volt-access',
    'secrets.s3.secretKey': 'volt-secret-key',
    'secrets.gatewayAdmin.key': 'gateway-admin-key',
    'secrets.modelServerAdmin.key': 'model-server-key',
    'secrets.dashboard.token': 'a-dashboard-token-of-32-characters',
  };
  const docs = chartDocs([
    'namespaces.volt=ml',
    'namespaces.rollouts=ml-rollouts',
    'minio.enabled=false',
    's3.endpoint=https://s3.example.com',
    'temporal.address=temporal.example.com:7233',
    'temporal.namespace=research',
    'prometheus.namespace=observability',
    'image.repository=registry.example.com/volt',
    'image.tag=1.2.3',
    ...Object.entries(keys).map(([k, v]) => `${k}=${v}`),
  ]);
  const find = <T>(kind: string, name: string) =>
    docs.find((d) => d.kind === kind && d.metadata.name === name) as T | undefined;

  void it('renders valid objects, each in one of its own namespaces, with no MinIO', async () => {
    await validateAll(docs);
    assertNamespaces(docs);
    assert.deepEqual([...new Set(docs.map((d) => d.metadata.namespace).filter(Boolean))].sort(), ['ml', 'ml-rollouts']);
    assert.equal(docs.filter((d) => d.metadata.name === 'volt-minio').length, 0);
  });

  void it('points every Volt process at the given Temporal, store and images', () => {
    const env = find<V1ConfigMap>('ConfigMap', 'volt-env')?.data ?? {};
    assert.equal(env.VOLT_TEMPORAL_ADDRESS, 'temporal.example.com:7233');
    assert.equal(env.VOLT_TEMPORAL_NAMESPACE, 'research');
    assert.equal(env.VOLT_S3_ENDPOINT, 'https://s3.example.com');
    assert.equal(env.VOLT_GATEWAY_URL, 'http://volt-gateway.ml.svc:8400');
    const images = docs
      .filter((d): d is V1Deployment & Doc => d.kind === 'Deployment')
      .flatMap((d) => d.spec?.template.spec?.containers.map((c) => c.image) ?? [])
      .filter((i) => i?.startsWith('registry.example.com/'));
    assert.deepEqual([...new Set(images)].sort(), [
      'registry.example.com/volt:1.2.3',
      'registry.example.com/volt:1.2.3-cuda',
    ]);
  });

  void it('creates each Secret given by value, and every secret a pod needs resolves to one of them', () => {
    const secrets = new Map(
      docs.filter((d) => d.kind === 'Secret').map((d) => [d.metadata.name, (d as V1Secret).stringData ?? {}]),
    );
    assert.deepEqual(secrets.get('volt-s3'), {
      'access-key': keys['secrets.s3.accessKey'],
      'secret-key': keys['secrets.s3.secretKey'],
    });
    assert.deepEqual(secrets.get('volt-dashboard'), { token: keys['secrets.dashboard.token'] });
    assert.equal(secrets.has('volt-gateway-metrics'), false, 'an optional secret without a value is not created');
    type Pods = Doc & { spec: { template: { spec: { containers: V1Container[] } } } };
    const refs = docs
      .filter((d): d is Pods => ['Deployment', 'StatefulSet'].includes(d.kind))
      .flatMap((d) => d.spec.template.spec.containers.flatMap((c) => c.env ?? []))
      .map((e) => e.valueFrom?.secretKeyRef)
      .filter((r) => r && !r.optional);
    assert.ok(refs.length >= 10);
    for (const ref of refs) assert.ok(secrets.get(ref!.name!)?.[ref!.key], `${ref!.name}/${ref!.key} is not created`);
  });

  void it('keeps the network policies on the given namespaces', () => {
    const egress = find<V1NetworkPolicy>('NetworkPolicy', 'rollouts-to-gateway-and-dns');
    assert.equal(egress?.metadata?.namespace, 'ml-rollouts');
    const to = (egress?.spec?.egress?.[0] as { to?: V1NetworkPolicyPeer[] } | undefined)?.to?.[0];
    assert.equal(to?.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'], 'ml');
    const ingress = find<V1NetworkPolicy>('NetworkPolicy', 'gateway-ingress');
    const from = (ingress?.spec?.ingress?.[0] as { from?: V1NetworkPolicyPeer[] } | undefined)?.from ?? [];
    assert.deepEqual(
      from.map((p) => p.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name']).filter(Boolean),
      ['ml-rollouts', 'observability'],
    );
  });
});

void it('the chart refuses bad values with an error that names the value', () => {
  for (const [sets, message] of [
    [['modelServer.maxLoraRank=0'], /modelServer\.maxLoraRank/],
    [['secrets.dashboard.token=short'], /secrets\.dashboard\.token/],
    [['namespaces.rollouts=Rollouts'], /namespaces\.rollouts/],
    [['temporal.address=not an address'], /temporal\.address/],
    [['minio.enabled=false'], /s3\.endpoint is required when minio\.enabled is false/],
    [['secrets.s3.accessKey=only-one'], /secrets\.s3\.secretKey/],
  ] as const) {
    const out = renderChart([...sets]);
    assert.notEqual(out.status, 0, sets.join(' '));
    assert.match(out.stderr, message, sets.join(' '));
  }
});
