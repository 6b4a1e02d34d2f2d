import { afterEach, describe, expect, it } from 'vitest';
import { createMetrics } from '../src/server/metrics.js';
import { MAX_WORDS_PER_FIELD, VocabularyRecorder } from '../src/pipeline/vocabulary.js';
import { WordCounts, type VocabularyField } from '../src/upstream/vocabulary.js';
import { testRedis, type TestRedis } from './helpers/redis.js';
import { waitFor } from './helpers/wait.js';
import { promtoolCheck } from './helpers/promtool.js';
import { captureLog } from './helpers/log.js';

let tr: TestRedis | undefined;
afterEach(async () => {
  await tr?.cleanup();
  tr = undefined;
});

function words(entries: [VocabularyField, string, number][]): WordCounts {
  const w = new WordCounts();
  for (const [field, word, count] of entries) for (let i = 0; i < count; i++) w.add(field, word);
  return w;
}

async function metricSamples(
  metrics: ReturnType<typeof createMetrics>,
): Promise<Record<string, number>> {
  const json = await metrics.unknownValues.get();
  return Object.fromEntries(
    json.values.map((v) => [`${String(v.labels.field)}=${String(v.labels.value)}`, v.value]),
  );
}

describe('upstream vocabulary drift (real Redis)', () => {
  it('counts unknown words per field, logs each new one once across replicas, and reports what was seen', async () => {
    tr = await testRedis('vocab');
    const a = captureLog();
    const b = captureLog();
    const metricsA = createMetrics();
    const metricsB = createMetrics();
    const replicaA = new VocabularyRecorder({
      redis: tr.redis,
      keys: tr.keys,
      log: a.log,
      unknownValues: metricsA.unknownValues,
    });
    const replicaB = new VocabularyRecorder({
      redis: tr.redis,
      keys: tr.keys,
      log: b.log,
      unknownValues: metricsB.unknownValues,
    });
    const response = words([
      ['sla.status', 'met', 3],
      ['sla.status', 'at_risk', 1],
      ['sla.status', 'within_target', 5],
      ['statusB.indicator', 'high', 2],
    ]);
    replicaA.record(response);
    replicaA.record(response);
    replicaB.record(response);
    const unknownLogs = () =>
      [...a.lines, ...b.lines].filter((l) => l.event === 'upstream:unknown_value');
    await waitFor(() => unknownLogs().length === 2, { what: 'two unknown-value log lines' });
    // Give a third line (a duplicate) the chance to appear before asserting there is none.
    replicaB.record(response);
    await tr.redis.ping();
    expect(
      unknownLogs()
        .map((l) => `${String(l.field)}=${String(l.value)}`)
        .sort(),
    ).toEqual(['sla.status=within_target', 'statusB.indicator=high']);
    expect(unknownLogs().find((l) => l.value === 'within_target')?.msg).toBe(
      'new upstream value "within_target" in sla.status: met when the margin is ≥ 0, breached when it is negative',
    );

    expect(await metricSamples(metricsA)).toEqual({
      'sla.status=within_target': 10,
      'statusB.indicator=high': 4,
    });
    expect(await metricSamples(metricsB)).toEqual({
      'sla.status=within_target': 10,
      'statusB.indicator=high': 4,
    });

    // The series passes promtool (when installed) with unknown values in it.
    const scrape = await metricsA.registry.metrics();
    expect(scrape).toContain(
      'statuswatch_upstream_unknown_values_total{field="sla.status",value="within_target"} 10',
    );
    const promtool = await promtoolCheck(scrape);
    if (promtool === null) console.warn('promtool not on PATH: skipped `promtool check metrics`');
    else expect(`${String(promtool.code)} ${promtool.stdout}${promtool.stderr}`).toBe('0 ');

    const report = await replicaA.report();
    const sla = report.find((f) => f.field === 'sla.status');
    expect(sla?.promised).toEqual(['at_risk']);
    expect(sla?.seen.map((s) => [s.value, s.promised, s.recognised, s.countHere])).toEqual([
      ['within_target', false, false, 10],
      ['met', false, true, 6],
      ['at_risk', true, true, 2],
    ]);
    expect(sla?.seen[0]?.firstSeen).toMatch(/^\d{4}-\d\d-\d\dT/);
    const indicator = report.find((f) => f.field === 'statusB.indicator');
    expect(indicator?.seen[0]).toMatchObject({
      value: 'high',
      recognised: false,
      meaning: 'not recognised: trouble (degraded at least)',
    });
    // A replica that never saw a word still lists it (from Redis), with no local count.
    const fresh = new VocabularyRecorder({ redis: tr.redis, keys: tr.keys, log: captureLog().log });
    const again = (await fresh.report()).find((f) => f.field === 'sla.status');
    expect(again?.seen.map((s) => [s.value, s.countHere]).sort()).toEqual([
      ['at_risk', 0],
      ['met', 0],
      ['within_target', 0],
    ]);
  });

  it(`keeps at most ${String(MAX_WORDS_PER_FIELD)} words a field; the rest are counted as "other" and logged once`, async () => {
    tr = await testRedis('vocab');
    const c = captureLog();
    const metrics = createMetrics();
    const rec = new VocabularyRecorder({
      redis: tr.redis,
      keys: tr.keys,
      log: c.log,
      unknownValues: metrics.unknownValues,
    });
    const many = Array.from(
      { length: 30 },
      (_, i) => ['incident.status', `word-${String(i).padStart(2, '0')}`, 1] as const,
    );
    rec.record(words(many.map(([f, w, n]) => [f, w, n])));
    rec.record(words([['incident.status', 'word-29', 1]]));
    const samples = await metricSamples(metrics);
    expect(Object.keys(samples)).toHaveLength(MAX_WORDS_PER_FIELD + 1);
    expect(samples['incident.status=other']).toBe(11);
    expect(c.lines.filter((l) => l.event === 'upstream:vocabulary_overflow')).toHaveLength(1);
    await waitFor(
      async () => (await tr?.redis.hlen(tr.keys.key('vocabulary'))) === MAX_WORDS_PER_FIELD,
      { what: 'twenty stored words' },
    );
    const report = await rec.report();
    expect(report.find((f) => f.field === 'incident.status')?.truncated).toBe(true);
  });
});
