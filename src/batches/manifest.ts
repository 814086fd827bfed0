import type { BatchConfig } from './config.js';
import type { GroupPlan } from './groups.js';
import type { SampleDropReason } from './sample-row.js';
import { RunningStats } from './stats.js';
import type { AttemptTrajectories, MergeBreak } from './trajectories.js';
import type { SampleRow } from '../contracts/sample.js';
import type { BatchManifest } from '../contracts/batch-manifest.js';

/** Accumulates the manifest while samples stream past, holding only counters, breaks and lineage. */
export class ManifestBuilder {
  private readonly counts = {
    spans: 0,
    transitions: 0,
    merges: 0,
    samples: 0,
    truncated: 0,
    rolloutsWithoutSamples: 0,
    attemptsWithTransitions: 0,
  };
  private readonly tokens = { prompt: 0, response: 0, trainable: 0 };
  private readonly reward = new RunningStats();
  private readonly advantage = new RunningStats();
  private readonly spanDrops: Record<string, number> = {};
  private readonly sampleDrops: Partial<Record<SampleDropReason, number>> = {};
  private readonly breaks: MergeBreak[] = [];
  private readonly lineage = new Map<string, string>();

  constructor(
    private readonly config: BatchConfig,
    private readonly plan: GroupPlan,
    private readonly rolloutsSeen: number,
  ) {
    for (const r of plan.rollouts) {
      this.reward.add(r.reward);
      this.advantage.add(r.advantage);
    }
  }

  addAttempt(spans: number, built: AttemptTrajectories): void {
    this.counts.spans += spans;
    this.counts.transitions += built.transitions;
    this.counts.merges += built.merges;
    if (built.transitions > 0) this.counts.attemptsWithTransitions += 1;
    for (const [k, v] of Object.entries(built.excluded)) this.dropSpans(k, v);
    for (const b of built.breaks) this.breaks.push(b);
  }

  dropSpans(reason: string, n: number): void {
    if (n > 0) this.spanDrops[reason] = (this.spanDrops[reason] ?? 0) + n;
  }

  addSample(row: SampleRow): void {
    this.counts.samples += 1;
    if (row.truncated) this.counts.truncated += 1;
    this.tokens.prompt += row.prompt_ids.length;
    this.tokens.response += row.response_ids.length;
    for (const m of row.loss_mask) this.tokens.trainable += m;
    for (const id of row.span_ids) this.lineage.set(id, row.sample_id);
  }

  rolloutWithoutSamples(): void {
    this.counts.rolloutsWithoutSamples += 1;
  }

  dropSample(reason: SampleDropReason): void {
    this.sampleDrops[reason] = (this.sampleDrops[reason] ?? 0) + 1;
  }

  finish(): BatchManifest {
    const { attemptsWithTransitions, ...counts } = this.counts;
    // Every usable call after the first of its attempt could have merged; mergeRate is the share that did.
    const opportunities = counts.transitions - attemptsWithTransitions;
    return {
      config: this.config,
      counts: {
        rollouts: this.rolloutsSeen,
        groups: this.plan.groups.total,
        groupsUsed: this.plan.groups.used,
        rolloutsUsed: this.plan.rollouts.length,
        ...counts,
      },
      tokens: { ...this.tokens },
      mergeRate: opportunities > 0 ? counts.merges / opportunities : null,
      lossScale: this.plan.lossScale,
      reward: this.reward.summary(),
      advantage: this.advantage.summary(),
      drops: {
        rollouts: this.plan.droppedRollouts,
        groups: this.plan.droppedGroups,
        spans: this.spanDrops,
        samples: this.sampleDrops,
      },
      breaks: this.breaks,
      lineage: Object.fromEntries(this.lineage),
    };
  }
}
