import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../src/log.js';
import { mulberry32 } from '../src/sim/prng.js';
import { VocabularyRecorder } from '../src/pipeline/vocabulary.js';
import { createMetrics } from '../src/server/metrics.js';
import type { Transition } from '../src/diff/transition.js';
import type { Wording } from '../src/sim/wording.js';
import { kindsOf, pipelineHarness, type PipelineHarness } from './helpers/pipeline.js';

let h: PipelineHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const ALL = ['status', 'incidents', 'sla', 'scores'] as const;

/**
 * The full timeline: an incident with a status change, its update and resolution; an SLA going
 * at_risk after a healthy baseline, then breached, then recovered; a slow score drift.
 */
async function timeline(harness: PipelineHarness): Promise<Transition[]> {
  const { sim } = harness;
  sim.setSla('adyen', { slaTarget: 99.5, uptime30d: 99.9 });
  sim.setScore('slack', 92);
  await harness.poll(...ALL); // baseline
  const seen: Transition[] = [];
  const poll = async (): Promise<void> => {
    seen.push(...(await harness.poll(...ALL)));
  };
  const id = sim.openIncident('stripe', { title: 'Card payments failing', body: 'Investigating' });
  sim.setStatus('stripe', 'major_outage');
  await poll();
  await poll(); // the second distinct snapshot confirms the status
  sim.updateIncident('stripe', id, { status: 'identified', body: 'Root cause found' });
  sim.setSla('adyen', { uptime30d: 99.55 });
  await poll();
  sim.setSla('adyen', { uptime30d: 99.1 });
  for (const score of [91, 90, 89.5, 88.5, 87.5, 87]) {
    sim.setScore('slack', score);
    await poll();
  }
  sim.setSla('adyen', { uptime30d: 99.9 });
  sim.resolveIncident('stripe', id, 'Fixed');
  sim.setStatus('stripe', 'operational');
  await poll();
  await poll();
  await poll();
  return seen;
}

const EXPECTED = [
  'incident.opened stripe',
  'status.changed stripe',
  'incident.updated stripe',
  'sla.at_risk adyen',
  'sla.breached adyen',
  'score.dropped slack',
  'incident.resolved stripe',
  'sla.recovered adyen',
  'status.changed stripe',
];

describe('the same transitions whatever the upstream calls things (simulator wordings)', () => {
  for (const variant of ['A', 'B'] as const) {
    for (const wording of ['standard', 'alternate'] as const satisfies readonly Wording[]) {
      it(`Variant ${variant}, ${wording} wording: the full timeline`, async () => {
        h = await pipelineHarness({ variant, wording });
        const seen = await timeline(h);
        expect(kindsOf(seen).sort()).toEqual([...EXPECTED].sort());
        const bySubject = (kind: string): Transition[] => seen.filter((t) => t.kind === kind);
        // at_risk after a healthy baseline, recovered after the breach, on the numbers.
        expect(bySubject('sla.at_risk')[0]?.previous).toEqual({ status: 'met' });
        expect(bySubject('sla.breached')[0]?.current.margin).toBeCloseTo(-0.4, 5);
        expect(bySubject('sla.recovered')[0]?.previous).toEqual({ status: 'breached' });
        const [down, up] = bySubject('status.changed');
        expect(down?.previous?.status).toBe('operational');
        expect(up?.current.status).toBe('operational');
        if (wording === 'standard') {
          expect(down?.current.status).toBe(variant === 'A' ? 'major_outage' : 'major_outage');
        } else {
          // Unknown words, read from the row's other fields: trouble of unknown severity.
          expect(down?.current.status).toBe('degraded');
          expect(down?.current.statusRaw).toBe(variant === 'A' ? 'unavailable' : 'offline');
        }
        const update = bySubject('incident.updated')[0];
        expect(update?.current.status).toBe(wording === 'standard' ? 'identified' : 'cause_found');
        expect(update?.incident?.latestUpdate).toBe('Root cause found');
      }, 30_000);
    }
  }

  it('unknown words are counted and listed; known ones are not counted', async () => {
    const metrics = createMetrics();
    let recorder: VocabularyRecorder | undefined;
    h = await pipelineHarness(
      { wording: 'alternate' },
      { statusConfirmations: 2, scoreDrop: 5 },
      (tr) => {
        recorder = new VocabularyRecorder({
          redis: tr.redis,
          keys: tr.keys,
          log: silentLogger(),
          unknownValues: metrics.unknownValues,
        });
        return { vocabulary: recorder };
      },
    );
    await timeline(h);
    const counted = (await metrics.unknownValues.get()).values.map(
      (v) => `${String(v.labels.field)}=${String(v.labels.value)}`,
    );
    for (const word of [
      'sla.status=within_target',
      'sla.status=missed',
      'status.displayStatus=unavailable',
      'incident.status=cause_found',
    ])
      expect(counted).toContain(word);
    // Promised words are never "unknown".
    for (const word of [
      'sla.status=at_risk',
      'status.displayStatus=operational',
      'incident.status=investigating',
    ])
      expect(counted).not.toContain(word);
    const report = await recorder?.report();
    const sla = report?.find((f) => f.field === 'sla.status');
    expect(sla?.seen.find((s) => s.value === 'within_target')).toMatchObject({
      recognised: false,
      promised: false,
      meaning: 'met when the margin is ≥ 0, breached when it is negative',
    });
    expect(sla?.seen.find((s) => s.value === 'at_risk')).toMatchObject({ promised: true });
  }, 30_000);
});

describe('early warnings from the numbers (real Redis, simulator)', () => {
  const rules = {
    statusConfirmations: 2,
    scoreDrop: 5,
    slaForecast: 72 * 3_600_000,
    scoreTrend: { points: 10, window: 7 * 24 * 3_600_000 },
  };
  /** One SLA poll every 15 minutes of simulated time. */
  async function slaPoll(harness: PipelineHarness): Promise<Transition[]> {
    const out = (await harness.pipeline.runCycle('sla')).transitions;
    harness.clock.advance(15 * 60_000);
    return out;
  }

  it('a steady decline of uptime_30d gives one sla.forecast with the projected time; none after the trend reverses', async () => {
    h = await pipelineHarness({}, rules);
    h.sim.setSla('adyen', { slaTarget: 99.5, uptime30d: 99.9 });
    const seen: Transition[] = [];
    // 0.01 pp an hour for 20 hours: 99.9 → 99.7.
    for (let q = 0; q <= 80; q++) {
      h.sim.setSla('adyen', { uptime30d: Math.round((99.9 - 0.0025 * q) * 10_000) / 10_000 });
      seen.push(...(await slaPoll(h)));
    }
    const forecasts = seen.filter((t) => t.kind === 'sla.forecast');
    expect(kindsOf(forecasts)).toEqual(['sla.forecast adyen']);
    const f = forecasts[0];
    const hours = Number(f?.current.hoursToBreach);
    // Margin m at burn 0.24 pp/day: m / 0.01 hours to the breach.
    expect(hours).toBeCloseTo(Number(f?.current.margin) / 0.01, 0);
    expect(Date.parse(String(f?.current.projectedBreachAt))).toBeCloseTo(
      (f?.observedAt ?? 0) + hours * 3_600_000,
      -4,
    );
    expect(f?.current.burnPerDay).toBeCloseTo(0.24, 2);
    // The trend reverses: nothing more (no repeat, no cancellation message).
    const after = seen.length;
    for (let q = 1; q <= 96; q++) {
      h.sim.setSla('adyen', { uptime30d: Math.round((99.7 + 0.0025 * q) * 10_000) / 10_000 });
      seen.push(...(await slaPoll(h)));
    }
    expect(seen.slice(after)).toEqual([]);
    expect(await h.handedOff()).toEqual(['sla.forecast adyen']);
  }, 30_000);

  it('noise around a flat line gives no forecast (two days, seeded)', async () => {
    h = await pipelineHarness({}, rules);
    h.sim.setSla('adyen', { slaTarget: 99.5, uptime30d: 99.8 });
    const rng = mulberry32(11);
    const seen: Transition[] = [];
    let v = 99.8;
    for (let q = 0; q <= 192; q++) {
      v = 99.8 + (v - 99.8) * 0.7 + (rng() - 0.5) * 0.03;
      h.sim.setSla('adyen', { uptime30d: Math.round(v * 10_000) / 10_000 });
      seen.push(...(await slaPoll(h)));
    }
    expect(seen).toEqual([]);
  }, 30_000);

  it('a zig-zag fall of the score over a week gives one score.trend', async () => {
    h = await pipelineHarness({}, { ...rules, scoreDrop: 30 });
    let v = 92;
    h.sim.setScore('slack', v);
    const seen: Transition[] = [];
    for (let i = 0; i <= 7 * 24; i++) {
      v = Math.round((v + (i % 2 === 0 ? -0.7 : 0.5)) * 100) / 100;
      h.sim.setScore('slack', v);
      seen.push(...(await h.pipeline.runCycle('scores')).transitions);
      h.clock.advance(3_600_000);
    }
    expect(kindsOf(seen)).toEqual(['score.trend slack']);
    expect(seen[0]?.current.fall).toBeGreaterThanOrEqual(10);
  }, 30_000);
});
