/**
 * Scenario timelines for the simulator: a list of steps, each applied at an offset (`at`) from
 * the start of playback. Loaded from YAML or JSON and validated with zod; every error names the
 * step index and the field.
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { toError } from '../errors.js';
import { SimulatorError } from './errors.js';
import { EVIDENCE_STATES, INCIDENT_STATUSES, SIM_STATUSES, type SimState } from './state.js';
import { WORDINGS } from './wording.js';

const DURATION_RE = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/** Parses `500ms`, `10s`, `2m`, `1h` (or a number of ms) into ms. */
export function parseDuration(value: string | number): number {
  if (typeof value === 'number') {
    if (Number.isFinite(value) && value >= 0) return value;
  } else {
    const m = DURATION_RE.exec(value.trim());
    const unit = m?.[2] as keyof typeof UNIT_MS | undefined;
    if (m && unit) return Math.round(Number(m[1]) * UNIT_MS[unit]);
  }
  throw new SimulatorError(
    'sim_invalid_argument',
    `invalid duration ${JSON.stringify(value)}: expected e.g. 500ms, 10s, 2m, 1h`,
  );
}

const at = z.union([
  z.number().nonnegative(),
  z.string().regex(DURATION_RE, { error: 'expected a duration like 500ms, 10s, 2m, 1h' }),
]);
const feedId = z.string().min(1);
const incidentId = z.string().min(1);
const openStatus = z.enum(['investigating', 'identified', 'monitoring']);
const pct = z.number().min(0).max(100);
/**
 * Hold the step until the next request to this endpoint (`GET /api/v1/<before>`) instead of
 * applying it at `at`: the change lands between two responses of the same instant.
 */
const before = z.enum(['status', 'incidents']).optional();

const stepSchema = z.discriminatedUnion('action', [
  z.strictObject({
    at,
    action: z.literal('incident.open'),
    feedId,
    incidentId: incidentId.optional(),
    title: z.string().min(1),
    status: openStatus.optional(),
    body: z.string().optional(),
  }),
  z.strictObject({
    at,
    action: z.literal('incident.update'),
    feedId,
    incidentId,
    status: z.enum(INCIDENT_STATUSES).optional(),
    body: z.string().min(1),
  }),
  z.strictObject({
    at,
    action: z.literal('incident.resolve'),
    feedId,
    incidentId,
    body: z.string().optional(),
  }),
  z.strictObject({ at, action: z.literal('status.set'), feedId, status: z.enum(SIM_STATUSES) }),
  z
    .strictObject({
      at,
      action: z.literal('sla.set'),
      feedId,
      uptime30d: pct.optional(),
      slaTarget: pct.optional(),
    })
    .refine((s) => s.uptime30d !== undefined || s.slaTarget !== undefined, {
      error: 'sla.set needs uptime30d or slaTarget',
      path: ['uptime30d'],
    }),
  z.strictObject({ at, action: z.literal('score.set'), feedId, score: pct }),
  z.strictObject({
    at,
    action: z.literal('evidence.set'),
    feedId,
    evidence: z.enum(EVIDENCE_STATES),
    before,
  }),
  z.strictObject({ at, action: z.literal('incidents.dataset'), fresh: z.boolean(), before }),
  z.strictObject({ at, action: z.literal('variant.set'), variant: z.enum(['A', 'B']) }),
  z.strictObject({ at, action: z.literal('wording.set'), wording: z.enum(WORDINGS) }),
]);

export const scenarioSchema = z.strictObject({ steps: z.array(stepSchema) });

export type Scenario = z.output<typeof scenarioSchema>;
export type ScenarioStep = Scenario['steps'][number];
export type ScenarioAction = ScenarioStep['action'];

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? String(p) : `.${String(p)}`;
  }
  return out === '' ? '(root)' : out;
}

/** Validates a parsed scenario document; the error lists every issue as `steps[i].field: message`. */
export function parseScenario(value: unknown, source = 'scenario'): Scenario {
  const result = scenarioSchema.safeParse(value);
  if (result.success) return result.data;
  const lines = result.error.issues.map((i) => `${formatPath(i.path)}: ${i.message}`);
  throw new SimulatorError('sim_scenario_invalid', `${source}: ${lines.join('; ')}`, {
    cause: result.error,
  });
}

/** Reads a scenario file (YAML, or JSON which is YAML too) and validates it. */
export async function loadScenario(file: string): Promise<Scenario> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new SimulatorError(
      'sim_scenario_read',
      `cannot read scenario ${file}: ${toError(err).message}`,
      {
        cause: err,
      },
    );
  }
  let doc: unknown;
  try {
    doc = file.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new SimulatorError(
      'sim_scenario_invalid',
      `${file}: not valid ${file.endsWith('.json') ? 'JSON' : 'YAML'}: ${toError(err).message}`,
      { cause: err },
    );
  }
  return parseScenario(doc, file);
}

/** The feedIds a scenario refers to, with their step index (for validation against a catalog). */
export function scenarioFeedIds(s: Scenario): { index: number; feedId: string }[] {
  const out: { index: number; feedId: string }[] = [];
  s.steps.forEach((step, index) => {
    if ('feedId' in step) out.push({ index, feedId: step.feedId });
  });
  return out;
}

/** Applies one step to the state (throws SimulatorError on unknown feed/incident). */
export function applyStepTo(state: SimState, step: ScenarioStep): void {
  switch (step.action) {
    case 'incident.open':
      state.openIncident(step.feedId, {
        id: step.incidentId,
        title: step.title,
        status: step.status,
        body: step.body,
      });
      return;
    case 'incident.update':
      state.updateIncident(step.feedId, step.incidentId, { status: step.status, body: step.body });
      return;
    case 'incident.resolve':
      state.resolveIncident(step.feedId, step.incidentId, step.body);
      return;
    case 'status.set':
      state.setStatus(step.feedId, step.status);
      return;
    case 'sla.set':
      state.setSla(step.feedId, { uptime30d: step.uptime30d, slaTarget: step.slaTarget });
      return;
    case 'score.set':
      state.setScore(step.feedId, step.score);
      return;
    case 'evidence.set':
      state.setEvidence(step.feedId, step.evidence);
      return;
    case 'incidents.dataset':
      state.setIncidentDatasetFresh(step.fresh);
      return;
    case 'variant.set':
      state.setVariant(step.variant);
      return;
    case 'wording.set':
      state.setWording(step.wording);
      return;
  }
}
