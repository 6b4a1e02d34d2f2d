import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode } from '../errors.js';
import { buildCatalog } from './catalog.js';
import { applyStepTo, loadScenario, parseDuration, parseScenario } from './scenario.js';
import { demoScenario } from './scenarios/demo.js';
import { SimState } from './state.js';

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sim-scenario-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function loadText(name: string, text: string): Promise<unknown> {
  const file = join(dir, name);
  await writeFile(file, text);
  return loadScenario(file);
}

async function errorOf(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['10s', 10_000],
    ['2m', 120_000],
    ['1h', 3_600_000],
    ['1.5s', 1500],
    [250, 250],
  ] as const)('%s -> %d ms', (input, ms) => {
    expect(parseDuration(input)).toBe(ms);
  });

  it('rejects garbage', () => {
    expect(() => parseDuration('10 parsecs')).toThrow(/invalid duration/);
    expect(() => parseDuration(-1)).toThrow(/invalid duration/);
  });
});

describe('loadScenario', () => {
  it('loads YAML and JSON', async () => {
    const yaml = await loadText(
      'ok.yaml',
      'steps:\n  - { at: 1s, action: status.set, feedId: stripe, status: degraded }\n',
    );
    expect(yaml).toEqual({
      steps: [{ at: '1s', action: 'status.set', feedId: 'stripe', status: 'degraded' }],
    });
    const json = await loadText(
      'ok.json',
      JSON.stringify({ steps: [{ at: 0, action: 'incidents.dataset', fresh: false }] }),
    );
    expect(json).toEqual({ steps: [{ at: 0, action: 'incidents.dataset', fresh: false }] });
  });

  it('names the step index and the field of every error', async () => {
    const err = await errorOf(
      loadText(
        'bad.yaml',
        [
          'steps:',
          '  - { at: 1s, action: status.set, feedId: stripe, status: degraded }',
          '  - { at: 2s, action: status.set, status: degraded }',
          '  - { at: soon, action: score.set, feedId: github, score: 50 }',
          '  - { at: 3s, action: explode, feedId: github }',
          '  - { at: 4s, action: score.set, feedId: github, score: 50, colour: red }',
          '  - { at: 5s, action: sla.set, feedId: github }',
        ].join('\n'),
      ),
    );
    expect(errorCode(err)).toBe('sim_scenario_invalid');
    expect(err.message).toContain('bad.yaml');
    expect(err.message).toMatch(/steps\[1\]\.feedId: /);
    expect(err.message).toMatch(/steps\[2\]\.at: /);
    expect(err.message).toMatch(/steps\[3\]\.action: /);
    expect(err.message).toMatch(/steps\[4\]: .*colour/);
    expect(err.message).toMatch(/steps\[5\]\.uptime30d: sla.set needs uptime30d or slaTarget/);
    expect(err.message).not.toMatch(/steps\[0\]/);
  });

  it('reports unreadable files and invalid YAML with their own codes', async () => {
    const missing = await errorOf(loadScenario(join(dir, 'nope.yaml')));
    expect(errorCode(missing)).toBe('sim_scenario_read');
    const broken = await errorOf(loadText('broken.yaml', 'steps: [ {at: 1s\n'));
    expect(errorCode(broken)).toBe('sim_scenario_invalid');
    expect(broken.message).toMatch(/not valid YAML/);
    const noSteps = await errorOf(loadText('empty.yaml', 'stages: []\n'));
    expect(noSteps.message).toMatch(/steps: /);
  });

  it('ships demo.yaml with the same content as demoScenario', async () => {
    const file = fileURLToPath(new URL('./scenarios/demo.yaml', import.meta.url));
    expect(await loadScenario(file)).toEqual(demoScenario);
    expect(parseScenario(demoScenario)).toEqual(demoScenario);
  });

  it('demo covers every event kind for the five demo services within 60 s', () => {
    const steps = demoScenario.steps;
    expect(Math.max(...steps.map((s) => parseDuration(s.at)))).toBeLessThanOrEqual(60_000);
    const actions = new Set(steps.map((s) => s.action));
    for (const a of [
      'incident.open',
      'incident.update',
      'incident.resolve',
      'status.set',
      'sla.set',
      'score.set',
      'evidence.set',
    ]) {
      expect(actions).toContain(a);
    }
    const feeds = new Set(steps.flatMap((s) => ('feedId' in s ? [s.feedId] : [])));
    expect([...feeds].sort()).toEqual(['aws-s3', 'github', 'okta', 'slack', 'stripe']);
  });
});

describe('held steps (`before`)', () => {
  it('evidence.set and incidents.dataset take `before: status | incidents`; other values are errors naming the field', () => {
    expect(
      parseScenario({
        steps: [
          { at: 0, action: 'evidence.set', feedId: 'okta', evidence: 'stale', before: 'incidents' },
          { at: '1s', action: 'incidents.dataset', fresh: false, before: 'status' },
        ],
      }).steps.map((s) => ('before' in s ? s.before : null)),
    ).toEqual(['incidents', 'status']);
    expect(() =>
      parseScenario({
        steps: [
          { at: 0, action: 'evidence.set', feedId: 'okta', evidence: 'stale', before: 'sla' },
        ],
      }),
    ).toThrow(/steps\[0\]\.before/);
    expect(() =>
      parseScenario({
        steps: [
          { at: 0, action: 'status.set', feedId: 'okta', status: 'degraded', before: 'status' },
        ],
      }),
    ).toThrow(/steps\[0\]/);
  });
});

describe('wording.set', () => {
  it('parses standard and alternate, and applies them to the state', () => {
    const s = parseScenario({
      steps: [
        { at: 0, action: 'wording.set', wording: 'alternate' },
        { at: '1s', action: 'wording.set', wording: 'standard' },
      ],
    });
    expect(s.steps).toEqual([
      { at: 0, action: 'wording.set', wording: 'alternate' },
      { at: '1s', action: 'wording.set', wording: 'standard' },
    ]);
    const state = new SimState({
      catalog: buildCatalog(10, 1),
      seed: 1,
      variant: 'A',
      now: () => 0,
    });
    const [first, second] = s.steps;
    applyStepTo(state, first!);
    expect(state.wording).toBe('alternate');
    applyStepTo(state, second!);
    expect(state.wording).toBe('standard');
  });

  it('rejects a bad wording or a missing one with an error naming steps[i].wording', () => {
    let err: unknown;
    try {
      parseScenario({
        steps: [
          { at: 0, action: 'wording.set', wording: 'alternate' },
          { at: 0, action: 'wording.set', wording: 'fancy' },
        ],
      });
    } catch (e) {
      err = e;
    }
    expect(errorCode(err)).toBe('sim_scenario_invalid');
    expect((err as Error).message).toMatch(/steps\[1\]\.wording: /);
    expect((err as Error).message).not.toMatch(/steps\[0\]/);
    expect(() => parseScenario({ steps: [{ at: 0, action: 'wording.set' }] })).toThrow(
      /steps\[0\]\.wording: /,
    );
  });
});
