/**
 * Request-budget planning, pure: what the configured polls cost in requests per minute against
 * the upstream's limit (30/min without a key, 120/min with one, or a configured number).
 */

/** The share of the budget a plan may use; the rest is headroom for retries, catalog and category refreshes. */
export const PLAN_SHARE = 0.8;

export interface PlanInput {
  poll: { status: number; incidents: number; sla: number; scores: number };
  hasApiKey: boolean;
  requestsPerMinute: 'auto' | number;
  /** Distinct category slugs subscriptions resolve through GET /services?category= (refreshed hourly). */
  categories?: number;
}

export interface PlanLine {
  name: string;
  intervalMs: number;
  requestsPerMinute: number;
  premium: boolean;
  /** What the line is, for messages: a configured poll, or requests the daemon adds itself. */
  source: 'poll' | 'refresh' | 'confirmations';
}

export interface Plan {
  /** The upstream limit we plan against. */
  budget: number;
  /** PLAN_SHARE of the budget: what the steady-state polls may use. */
  allowed: number;
  lines: PlanLine[];
  total: number;
  ok: boolean;
  /** Lines that explain an over-budget plan, costliest first (empty when ok). */
  offending: PlanLine[];
  /**
   * Confirming reads (`GET /incidents/{feedId}`) one incidents cycle may make for Variant A
   * incidents that vanished from the bulk list: what the headroom within PLAN_SHARE allows,
   * at least 1, at most MAX_CONFIRMATIONS_PER_CYCLE. Reserved in the plan as a line of its own.
   */
  confirmationsPerCycle: number;
}

export const MAX_CONFIRMATIONS_PER_CYCLE = 10;

export const CATALOG_INTERVAL_MS = 60 * 60 * 1000;
/** How often each category is fetched again (the request plan counts this rate). */
export const CATEGORY_INTERVAL_MS = 60 * 60 * 1000;
/**
 * How often the categories job looks (one HGET per slug): a category a subscription names for
 * the first time (from the API or a reload) is fetched within this, not within the hour.
 */
export const CATEGORY_CHECK_MS = 60 * 1000;

export function budgetOf(requestsPerMinute: 'auto' | number, hasApiKey: boolean): number {
  if (requestsPerMinute !== 'auto') return requestsPerMinute;
  return hasApiKey ? 120 : 30;
}

const perMinute = (intervalMs: number): number => 60_000 / intervalMs;

export function planRequests(input: PlanInput): Plan {
  const lines: PlanLine[] = [
    {
      name: 'status',
      intervalMs: input.poll.status,
      requestsPerMinute: perMinute(input.poll.status),
      premium: false,
      source: 'poll',
    },
    {
      name: 'incidents',
      intervalMs: input.poll.incidents,
      requestsPerMinute: perMinute(input.poll.incidents),
      premium: false,
      source: 'poll',
    },
  ];
  if (input.hasApiKey) {
    lines.push(
      {
        name: 'sla',
        intervalMs: input.poll.sla,
        requestsPerMinute: perMinute(input.poll.sla),
        premium: true,
        source: 'poll',
      },
      {
        name: 'scores',
        intervalMs: input.poll.scores,
        requestsPerMinute: perMinute(input.poll.scores),
        premium: true,
        source: 'poll',
      },
    );
  }
  lines.push({
    name: 'catalog',
    intervalMs: CATALOG_INTERVAL_MS,
    requestsPerMinute: perMinute(CATALOG_INTERVAL_MS),
    premium: false,
    source: 'refresh',
  });
  const categories = input.categories ?? 0;
  if (categories > 0) {
    lines.push({
      name: `categories (${categories})`,
      intervalMs: CATEGORY_INTERVAL_MS,
      requestsPerMinute: categories * perMinute(CATEGORY_INTERVAL_MS),
      premium: false,
      source: 'refresh',
    });
  }
  const budget = budgetOf(input.requestsPerMinute, input.hasApiKey);
  const allowed = budget * PLAN_SHARE;
  const planned = lines.reduce((sum, l) => sum + l.requestsPerMinute, 0);
  const incidentsPerMinute = perMinute(input.poll.incidents);
  const confirmationsPerCycle = Math.min(
    MAX_CONFIRMATIONS_PER_CYCLE,
    Math.max(1, Math.floor((allowed - planned) / incidentsPerMinute + 1e-9)),
  );
  lines.push({
    name: 'incident confirmations',
    intervalMs: input.poll.incidents,
    requestsPerMinute: confirmationsPerCycle * incidentsPerMinute,
    premium: false,
    source: 'confirmations',
  });
  const total = planned + confirmationsPerCycle * incidentsPerMinute;
  const ok = total <= allowed + 1e-9;
  const offending = ok
    ? []
    : [...lines]
        .sort((a, b) => b.requestsPerMinute - a.requestsPerMinute)
        .filter((l) => l.requestsPerMinute >= 1);
  return { budget, allowed, lines, total, ok, offending, confirmationsPerCycle };
}

export function formatRate(n: number): string {
  return n >= 10 || Number.isInteger(n) ? String(Math.round(n * 10) / 10) : n.toFixed(2);
}

export function formatInterval(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** One message naming the offending intervals, for the refusal of an over-budget plan. */
export function describeOverBudget(plan: Plan): string {
  const parts = plan.offending.map((l) =>
    l.source === 'confirmations'
      ? `incident confirmations (at least 1 per incidents poll) = ${formatRate(l.requestsPerMinute)}/min`
      : `poll.${l.name} every ${formatInterval(l.intervalMs)} = ${formatRate(l.requestsPerMinute)}/min`,
  );
  return (
    `request plan needs ${formatRate(plan.total)} requests/min but may use at most ${formatRate(plan.allowed)} ` +
    `(${Math.round(PLAN_SHARE * 100)}% of the ${plan.budget}/min budget): ${parts.join(', ')}; ` +
    'lengthen these intervals or raise upstream.requestsPerMinute if your key allows more'
  );
}

/**
 * The run-time limiter for the shared poll queue: jobs per window across all replicas. Windows
 * are short (10 s) so that a minute of the upstream's own (unaligned) window can overlap at most
 * seven of ours: 7 × max stays within the budget.
 */
export function limiterFor(budget: number): { max: number; duration: number } {
  return { max: Math.max(1, Math.floor(budget / 7)), duration: 10_000 };
}
