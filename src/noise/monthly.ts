import type { UpstreamClient } from '../upstream/index.js';

const pct = (n: number | null): string => (n === null ? '?' : `${Math.round(n * 100) / 100}%`);

/**
 * The month figures of a month-end digest: the upstream's SLA and score records for `month`
 * (`GET /sla?month=`, `GET /scores?month=`; premium), summarised and, for the given services, listed.
 */
export function monthlyFigures(client: Pick<UpstreamClient, 'sla' | 'scores'>) {
  return async (month: string, feedIds: readonly string[]): Promise<string[]> => {
    const [sla, scores] = await Promise.all([client.sla({ month }), client.scores({ month })]);
    const s = sla.data.summary;
    const lines = [
      `${month}: SLA compliance ${pct(s.complianceRate)} across ${String(s.servicesTracked ?? '?')} services, ` +
        `${String(s.servicesBreachingSla ?? '?')} below target`,
    ];
    const wanted = new Set(feedIds);
    for (const r of sla.data.services.filter((x) => wanted.has(x.feedId))) {
      lines.push(
        `${r.name} ${month}: uptime ${pct(r.uptime30d)} vs target ${pct(r.slaTarget)} (${r.status === 'unknown' ? r.statusRaw : r.status})`,
      );
    }
    for (const r of scores.data.scores.filter((x) => wanted.has(x.feedId))) {
      lines.push(`${r.name} ${month}: score ${r.score}${r.grade === null ? '' : ` (${r.grade})`}`);
    }
    return lines;
  };
}
