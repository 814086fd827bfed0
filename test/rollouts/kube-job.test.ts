import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { ConfigError } from '../../src/config/errors.js';
import { parseKubeRunnerConfig } from '../../src/rollouts/kube-config.js';
import { jobName } from '../../src/rollouts/kube-job.js';
import { classifyJob } from '../../src/rollouts/kube-outcome.js';

const id = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/).filter((s) => !s.includes('..'));

void describe('jobName', () => {
  void it('is a DNS-1123 label for any valid ids, and distinct ids give distinct names', () => {
    fc.assert(
      fc.property(id, fc.nat(99999), id, fc.nat(99), id, (runId, iteration, rolloutId, attempt, other) => {
        const name = jobName({ runId, iteration, rolloutId, attempt });
        assert.match(name, /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
        if (other !== rolloutId) assert.notEqual(jobName({ runId, iteration, rolloutId: other, attempt }), name);
      }),
    );
  });
});

const job = (type?: string, reason?: string): V1Job => ({
  status: type ? { conditions: [{ type, status: 'True', reason }] } : {},
});
const pod = (status: V1Pod['status']): V1Pod => ({ metadata: { name: 'p' }, status });
const exited = (exitCode: number, reason = 'Error') =>
  pod({
    phase: 'Failed',
    initContainerStatuses: [
      {
        name: 'agent',
        image: 'i',
        imageID: '',
        ready: false,
        restartCount: 0,
        state: { terminated: { exitCode, reason } },
      },
    ],
  });

void describe('classifyJob', () => {
  void it('maps Job and pod states to outcomes', () => {
    assert.equal(classifyJob(job(), [pod({ phase: 'Pending' })]), null);
    assert.equal(classifyJob(job(), [exited(1)]), null, 'a failed pod alone waits for the Job to say why');
    assert.equal(classifyJob(job('Complete'), [])?.outcome, 'succeeded');
    assert.equal(classifyJob(job('SuccessCriteriaMet'), [])?.outcome, 'succeeded');
    assert.equal(classifyJob(job('Failed', 'DeadlineExceeded'), [exited(137)])?.outcome, 'timed_out');
    assert.equal(classifyJob(job('FailureTarget', 'DeadlineExceeded'), [])?.outcome, 'timed_out');
    assert.deepEqual(classifyJob(job('Failed', 'BackoffLimitExceeded'), [exited(137, 'OOMKilled')]), {
      outcome: 'agent_failed',
      exitCode: 137,
      detail: 'agent exited with 137 (OOMKilled)',
    });
    assert.equal(classifyJob(job('Failed', 'BackoffLimitExceeded'), [])?.outcome, 'infra_failed');
    assert.equal(classifyJob(job(), [pod({ phase: 'Failed', reason: 'Evicted' })])?.outcome, 'infra_failed');
    assert.equal(classifyJob(job(), [pod({ phase: 'Unknown' })])?.outcome, 'infra_failed');
    assert.equal(
      classifyJob(job(), [
        pod({
          phase: 'Running',
          conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'PreemptionByScheduler' }],
        }),
      ])?.outcome,
      'infra_failed',
    );
    const waiting = (reason: string) =>
      pod({
        phase: 'Pending',
        initContainerStatuses: [
          { name: 'agent', image: 'i', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason } } },
        ],
      });
    assert.equal(classifyJob(job(), [waiting('ErrImagePull')])?.outcome, 'infra_failed');
    assert.equal(classifyJob(job(), [waiting('ContainerCreating')]), null);
  });
});

void describe('parseKubeRunnerConfig', () => {
  void it('names misspelt or bad fields instead of dropping them', () => {
    assert.throws(
      () =>
        parseKubeRunnerConfig({
          image: 'x',
          imagePulPolicy: 'Always',
          resources: { requests: { cpu: 'lots', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
        }),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.message.includes('imagePulPolicy') &&
        e.issues.some((i) => i.path === 'resources.requests.cpu'),
    );
    assert.equal(parseKubeRunnerConfig({ image: 'x' }).namespace, 'volt-rollouts');
  });
});
