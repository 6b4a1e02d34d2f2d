import { DateTime } from 'luxon';
import type { EventKind } from '../config/events.js';
import type { Transition, TransitionValues } from '../diff/transition.js';

export interface DigestInput {
  subscription: string;
  /** Unix ms, inclusive. */
  from: number;
  /** Unix ms, exclusive. */
  to: number;
  /** Every transition routed to this subscription in [from, to), chronological. */
  transitions: readonly Transition[];
  /** `incident.opened` transitions of incidents not yet closed at `to` (may predate `from`). */
  stillOpen: readonly Transition[];
  /** Openings of `stillOpen` someone acknowledged (src/noise/acks.ts): transition id → by whom. */
  acknowledged?: ReadonlyMap<string, string>;
  /** IANA time zone every time is shown in. */
  timezone: string;
  /** SLA and score sections need the premium API; without it they are left out. */
  premium: boolean;
}

export interface Digest {
  /** "Weekly digest for payments: 16–23 Nov 2026". */
  title: string;
  /** One line each; plain text (renderers escape it for their channel). */
  summary: string[];
  /** The period's transitions, most relevant first, at most `DIGEST_TRANSITION_LIMIT`. */
  transitions: Transition[];
}

export const DIGEST_TRANSITION_LIMIT = 50;

const LOCALE = 'en-US';
const MINUTE_MS = 60_000;
const PREMIUM_KINDS: ReadonlySet<EventKind> = new Set<EventKind>([
  'sla.at_risk',
  'sla.breached',
  'sla.recovered',
  'score.dropped',
  'sla.forecast',
  'score.trend',
]);

const INCIDENT_KINDS: ReadonlySet<EventKind> = new Set<EventKind>([
  'incident.opened',
  'incident.updated',
  'incident.resolved',
]);

/** Lower is more relevant. Incidents still open come before everything else. */
const KIND_RANK: Readonly<Record<EventKind, number>> = {
  'sla.breached': 1,
  'incident.opened': 2,
  'sla.at_risk': 3,
  'score.dropped': 4,
  'sla.forecast': 4,
  'score.trend': 4,
  'status.changed': 5,
  'incident.resolved': 6,
  'upstream.degraded': 7,
  'incident.updated': 8,
  'sla.recovered': 9,
  'upstream.recovered': 10,
};

/** "1h 30m", "2d 4h", "45m", "<1m": the two largest units, rounded down to the minute. */
export function formatSpan(ms: number): string {
  const minutes = Math.floor(Math.max(0, ms) / MINUTE_MS);
  if (minutes < 1) return '<1m';
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  const rest = minutes % 60;
  if (days > 0) return hours > 0 ? `${days}d ${hours}h` : `${days}d`;
  if (hours > 0) return rest > 0 ? `${hours}h ${rest}m` : `${hours}h`;
  return `${rest}m`;
}

function formatNumber(value: number): string {
  return String(Number(value.toFixed(2)));
}

function numberOf(values: TransitionValues | null, key: string): number | null {
  const value = values?.[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function stringOf(values: TransitionValues | null, key: string): string | null {
  const value = values?.[key];
  return typeof value === 'string' && value !== '' ? value : null;
}

function serviceName(t: Transition): string {
  return t.service.name ?? t.feedId;
}

function incidentKey(t: Transition): string {
  return `${t.feedId}\u0000${t.subject}`;
}

/** Formats instants in the digest's zone; the weekday alone where it names one date of the period. */
class Clock {
  readonly #zone: string;
  readonly #from: number;
  readonly #to: number;
  readonly #firstDay: DateTime;
  readonly #lastDay: DateTime;

  constructor(zone: string, from: number, to: number) {
    this.#zone = zone;
    this.#from = from;
    this.#to = to;
    this.#firstDay = this.at(from).startOf('day');
    this.#lastDay = this.at(Math.max(from, to - 1)).startOf('day');
  }

  at(ms: number): DateTime {
    return DateTime.fromMillis(ms, { zone: this.#zone, locale: LOCALE });
  }

  /** "Tue 10:04" inside the period when no other day of it is a Tuesday, else "Tue 17 Nov 10:04". */
  when(ms: number): string {
    const time = this.at(ms);
    const day = time.startOf('day');
    const inside = ms >= this.#from && ms < this.#to;
    const weekdayIsUnique =
      day.minus({ weeks: 1 }) < this.#firstDay && day.plus({ weeks: 1 }) > this.#lastDay;
    if (inside && weekdayIsUnique) return time.toFormat('ccc HH:mm');
    if (time.year === this.#lastDay.year) return time.toFormat('ccc d LLL HH:mm');
    return time.toFormat('ccc d LLL yyyy HH:mm');
  }

  /** "16 Nov 2026", "16–23 Nov 2026", "26 Oct–1 Nov 2026", "28 Dec 2026–3 Jan 2027". */
  range(): string {
    const first = this.#firstDay;
    const last = this.#lastDay;
    if (first.hasSame(last, 'day')) return first.toFormat('d LLL yyyy');
    if (first.hasSame(last, 'month'))
      return `${first.toFormat('d')}–${last.toFormat('d LLL yyyy')}`;
    if (first.hasSame(last, 'year')) {
      return `${first.toFormat('d LLL')}–${last.toFormat('d LLL yyyy')}`;
    }
    return `${first.toFormat('d LLL yyyy')}–${last.toFormat('d LLL yyyy')}`;
  }

  /** Daily, Weekly or Monthly when the period is exactly one such calendar step, else null. */
  cadence(): 'Daily' | 'Weekly' | 'Monthly' | null {
    const start = this.at(this.#from);
    if (start.plus({ days: 1 }).toMillis() === this.#to) return 'Daily';
    if (start.plus({ weeks: 1 }).toMillis() === this.#to) return 'Weekly';
    if (start.plus({ months: 1 }).toMillis() === this.#to) return 'Monthly';
    return null;
  }
}

interface IncidentStory {
  latest: Transition;
  opened: Transition | null;
  resolved: Transition | null;
  lastUpdate: Transition | null;
}

function incidentLines(input: DigestInput, inPeriod: Transition[], clock: Clock): string[] {
  const stories = new Map<string, IncidentStory>();
  for (const t of inPeriod) {
    if (!INCIDENT_KINDS.has(t.kind)) continue;
    const key = incidentKey(t);
    const story = stories.get(key) ?? { latest: t, opened: null, resolved: null, lastUpdate: null };
    story.latest = t;
    if (t.kind === 'incident.opened') story.opened ??= t;
    else if (t.kind === 'incident.resolved') story.resolved = t;
    else story.lastUpdate = t;
    stories.set(key, story);
  }
  const label = (t: Transition): string => `${serviceName(t)} — ${t.incident?.title ?? t.subject}`;

  const openKeys = new Set<string>();
  const open: { since: number; line: string }[] = [];
  for (const opening of [...input.stillOpen].sort((a, b) => a.observedAt - b.observedAt)) {
    const key = incidentKey(opening);
    if (openKeys.has(key)) continue;
    openKeys.add(key);
    const since = opening.observedAt;
    const named = stories.get(key)?.latest ?? opening;
    const by = input.acknowledged?.get(opening.id);
    open.push({
      since,
      line: `${label(named)}: still open since ${clock.when(since)} (${formatSpan(input.to - since)})${by === undefined ? '' : `, acknowledged by ${by}`}`,
    });
  }

  const closed: { at: number; line: string }[] = [];
  for (const [key, story] of stories) {
    if (openKeys.has(key)) continue;
    const { opened, resolved, latest } = story;
    const name = label(latest);
    if (resolved !== null && opened !== null && opened.observedAt <= resolved.observedAt) {
      const span = formatSpan(resolved.observedAt - opened.observedAt);
      closed.push({
        at: opened.observedAt,
        line: `${name}: opened ${clock.when(opened.observedAt)}, resolved ${clock.when(resolved.observedAt)} (${span})`,
      });
    } else if (resolved !== null) {
      const started = (resolved.incident?.started ?? 0) * 1000;
      const resolvedAt = resolved.observedAt;
      const line =
        started > 0 && started < resolvedAt
          ? `${name}: started ${clock.when(started)}, resolved ${clock.when(resolvedAt)} (${formatSpan(resolvedAt - started)})`
          : `${name}: resolved ${clock.when(resolvedAt)} (opened before this period)`;
      closed.push({ at: Math.min(started > 0 ? started : resolvedAt, resolvedAt), line });
    } else if (opened !== null) {
      closed.push({
        at: opened.observedAt,
        line: `${name}: opened ${clock.when(opened.observedAt)}`,
      });
    } else if (story.lastUpdate !== null) {
      const at = story.lastUpdate.observedAt;
      closed.push({ at, line: `${name}: updated ${clock.when(at)}` });
    }
  }
  closed.sort((a, b) => a.at - b.at);
  const lines = [...closed.map((c) => c.line), ...open.map((o) => o.line)];
  return lines.length > 0 ? lines : ['No incidents'];
}

function statusLines(inPeriod: Transition[]): string[] {
  const byService = new Map<string, { name: string; count: number; now: string | null }>();
  for (const t of inPeriod) {
    if (t.kind !== 'status.changed') continue;
    const entry = byService.get(t.feedId) ?? { name: serviceName(t), count: 0, now: null };
    entry.count += 1;
    entry.name = serviceName(t);
    entry.now = stringOf(t.current, 'status');
    byService.set(t.feedId, entry);
  }
  if (byService.size === 0) return ['No status changes'];
  return [...byService.values()]
    .sort((a, b) => b.count - a.count || a.name.localeCompare(b.name, LOCALE))
    .map((e) => {
      const changes = e.count === 1 ? '1 status change' : `${e.count} status changes`;
      return e.now === null
        ? `${e.name}: ${changes}`
        : `${e.name}: ${changes}, now ${e.now.replaceAll('_', ' ')}`;
    });
}

function slaLines(inPeriod: Transition[]): string[] {
  const latest = new Map<string, Transition>();
  for (const t of inPeriod) {
    if (t.kind === 'sla.at_risk' || t.kind === 'sla.breached' || t.kind === 'sla.recovered') {
      latest.set(t.feedId, t);
    }
  }
  const rows = [...latest.values()]
    .filter((t) => t.kind !== 'sla.recovered')
    .map((t) => ({
      t,
      breached: t.kind === 'sla.breached',
      margin: numberOf(t.current, 'margin'),
      uptime: numberOf(t.current, 'uptime30d'),
      target: numberOf(t.current, 'slaTarget'),
    }))
    .sort(
      (a, b) =>
        Number(b.breached) - Number(a.breached) ||
        (a.margin ?? 0) - (b.margin ?? 0) ||
        serviceName(a.t).localeCompare(serviceName(b.t), LOCALE),
    );
  if (rows.length === 0) return ['No SLA at risk or breached'];
  return rows.map(({ t, breached, margin, uptime, target }) => {
    let line = `${serviceName(t)} SLA ${breached ? 'breached' : 'at risk'}`;
    if (margin !== null) {
      line += `: margin ${margin > 0 ? '+' : ''}${formatNumber(margin)} pp`;
    }
    if (uptime !== null && target !== null) {
      line += ` (uptime ${formatNumber(uptime)}%, target ${formatNumber(target)}%)`;
    }
    return line;
  });
}

function scoreLines(inPeriod: Transition[]): string[] {
  const byService = new Map<string, { first: Transition; last: Transition }>();
  for (const t of inPeriod) {
    if (t.kind !== 'score.dropped') continue;
    const entry = byService.get(t.feedId);
    if (entry === undefined) byService.set(t.feedId, { first: t, last: t });
    else entry.last = t;
  }
  const rows = [...byService.values()].map(({ first, last }) => {
    const before = numberOf(first.previous, 'score');
    const after = numberOf(last.current, 'score');
    return { first, last, before, after, drop: (before ?? 0) - (after ?? 0) };
  });
  if (rows.length === 0) return ['No score or grade changes'];
  const side = (score: number | null, grade: string | null): string => {
    const text = score === null ? '?' : formatNumber(score);
    return grade === null ? text : `${text} (${grade})`;
  };
  return rows
    .sort(
      (a, b) => b.drop - a.drop || serviceName(a.last).localeCompare(serviceName(b.last), LOCALE),
    )
    .map(
      ({ first, last, before, after }) =>
        `${serviceName(last)} score: ${side(before, stringOf(first.previous, 'grade'))} → ${side(after, stringOf(last.current, 'grade'))}`,
    );
}

/** Early warnings of the period (premium): the latest forecast and score trend per service. */
function earlyWarningLines(inPeriod: Transition[]): string[] {
  const latest = new Map<string, Transition>();
  for (const t of inPeriod)
    if (t.kind === 'sla.forecast' || t.kind === 'score.trend')
      latest.set(`${t.feedId}|${t.kind}`, t);
  return [...latest.values()]
    .sort(
      (a, b) => serviceName(a).localeCompare(serviceName(b), LOCALE) || (a.kind < b.kind ? -1 : 1),
    )
    .map((t) => {
      if (t.kind === 'sla.forecast') {
        const at = stringOf(t.current, 'projectedBreachAt');
        const burn = numberOf(t.current, 'burnPerDay');
        let line = `${serviceName(t)} SLA breach was projected`;
        if (at !== null) line += ` for ${at.slice(0, 16).replace('T', ' ')} UTC`;
        if (burn !== null) line += ` (burning ${formatNumber(burn)} pp/day)`;
        return line;
      }
      const fall = numberOf(t.current, 'fall');
      return `${serviceName(t)} score falling: ${formatNumber(numberOf(t.previous, 'score') ?? 0)} → ${formatNumber(numberOf(t.current, 'score') ?? 0)}${fall === null ? '' : ` (−${formatNumber(fall)})`}`;
    });
}

/**
 * The digest of one subscription's period [from, to): a title, summary lines (incidents resolved
 * and still open with durations, status changes per service, and — premium only — SLA records at
 * risk or breached and score changes), and the period's transitions most relevant first.
 * Pure: times are shown in `timezone`, nothing reads a clock.
 */
export function buildDigest(input: DigestInput): Digest {
  const clock = new Clock(input.timezone, input.from, input.to);
  const inPeriod = input.transitions.filter(
    (t) =>
      t.observedAt >= input.from &&
      t.observedAt < input.to &&
      (input.premium || !PREMIUM_KINDS.has(t.kind)),
  );

  const cadence = clock.cadence();
  const title =
    cadence === null
      ? `Digest for ${input.subscription}: ${clock.range()}`
      : `${cadence} digest for ${input.subscription}: ${clock.range()}`;

  const summary = [...incidentLines(input, inPeriod, clock), ...statusLines(inPeriod)];
  if (input.premium)
    summary.push(...slaLines(inPeriod), ...scoreLines(inPeriod), ...earlyWarningLines(inPeriod));

  const openKeys = new Set(input.stillOpen.map(incidentKey));
  const rank = (t: Transition): number =>
    t.kind === 'incident.opened' && openKeys.has(incidentKey(t)) ? 0 : KIND_RANK[t.kind];
  const transitions = [...inPeriod]
    .sort(
      (a, b) =>
        rank(a) - rank(b) ||
        b.observedAt - a.observedAt ||
        (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    )
    .slice(0, DIGEST_TRANSITION_LIMIT);

  return { title, summary, transitions };
}
