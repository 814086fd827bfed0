import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { loadAllYaml, type V1NetworkPolicy, type V1NetworkPolicyPeer, type V1Role } from '@kubernetes/client-node';
import type { V1ConfigMap, V1Container, V1Deployment } from '@kubernetes/client-node';
import { parseRunConfig } from '../../src/config/run.js';
import { numberRules } from '../../src/config/run-rules.js';
import { kubeRunnerConfigSchema } from '../../src/rollouts/kube-config.js';
import { buildRolloutJob } from '../../src/rollouts/kube-job.js';
import { rolloutSpecSchema } from '../../src/rollouts/spec.js';
import { specFor } from './fixtures.js';

const deployDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../deploy');

interface Doc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
}

async function loadDeploy(): Promise<{ file: string; doc: Doc }[]> {
  const files = (await readdir(deployDir, { recursive: true })).filter((f) => /\.ya?ml$/.test(f)).sort();
  const docs = await Promise.all(
    files.map(async (file) =>
      loadAllYaml(await readFile(path.join(deployDir, file), 'utf8'))
        .filter(Boolean)
        .map((doc) => ({ file, doc: doc as Doc })),
    ),
  );
  return docs.flat();
}

/** The kubernetes-models class for a document's apiVersion and kind, e.g. networking.k8s.io/v1 NetworkPolicy. */
async function modelFor(doc: Doc): Promise<new (d: unknown) => { validate(): void }> {
  const mod = (await import(`kubernetes-models/${doc.apiVersion}/${doc.kind}`)) as Record<string, unknown>;
  return mod[doc.kind] as new (d: unknown) => { validate(): void };
}

void describe('deploy/ manifests', async () => {
  const docs = await loadDeploy();
  const find = <T>(kind: string, name: string) =>
    docs.find((d) => d.doc.kind === kind && d.doc.metadata.name === name)?.doc as T | undefined;

  void it('parse and pass Kubernetes schema validation', async () => {
    assert.ok(docs.length >= 8, `only ${docs.length} documents found`);
    for (const { file, doc } of docs) {
      assert.ok(doc.apiVersion && doc.kind, `${file}: a document without apiVersion/kind`);
      const Model = await modelFor(doc);
      assert.doesNotThrow(() => new Model(doc).validate(), `${file}: ${doc.kind}/${doc.metadata.name}`);
    }
  });

  void it('put every namespaced object into a namespace that deploy/ defines', () => {
    const namespaces = new Set(docs.filter((d) => d.doc.kind === 'Namespace').map((d) => d.doc.metadata.name));
    for (const { file, doc } of docs.filter((d) => d.doc.metadata.namespace)) {
      assert.ok(
        namespaces.has(doc.metadata.namespace as string),
        `${file}: unknown namespace ${doc.metadata.namespace}`,
      );
    }
  });

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
            `${w.metadata.name}: claim ${v.persistentVolumeClaim.claimName} is not defined in deploy/`,
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
});
