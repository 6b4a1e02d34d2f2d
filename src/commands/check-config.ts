import type { Config } from '../config/schema.js';
import { formatInterval, formatRate, describeOverBudget } from '../budget/plan.js';
import { planOf } from '../app.js';
import { createUpstreamClient } from '../upstream/index.js';
import { toError } from '../errors.js';
import { describeRedis, redactText, secretValues } from '../config/redact.js';
import { kindOf } from '../notify/kinds.js';

export interface CheckReport {
  ok: boolean;
  text: string;
}

function channelLine(name: string, c: Config['channels'][string]): string {
  return `  ${name}: ${kindOf(c).describe(c)}`;
}

/**
 * The text `statuswatch check-config` prints: channels, subscriptions with the services they
 * resolve to, and the request plan against the budget. Categories are resolved against the
 * upstream unless `offline`. No secret appears in it.
 */
export async function checkConfigReport(
  file: string,
  config: Config,
  o: { offline: boolean },
): Promise<CheckReport> {
  const plan = planOf(config);
  const lines: string[] = [
    plan.ok
      ? `config ${file}: valid`
      : `config ${file}: INVALID: the request plan is over the budget (see below)`,
    '',
  ];
  lines.push(
    `upstream ${config.upstream.baseUrl} (${config.upstream.apiKey === undefined ? 'no API key: public endpoints only' : 'API key set: premium polls on'})`,
  );
  lines.push(
    redactText(describeRedis(config.redis), secretValues(config)),
    `redis prefix {${config.redis.prefix}}`,
    '',
  );

  lines.push(`channels (${Object.keys(config.channels).length}):`);
  for (const [name, c] of Object.entries(config.channels)) lines.push(channelLine(name, c));
  lines.push('');

  const slugs = [...new Set(config.subscriptions.flatMap((s) => s.categories))];
  const resolved = new Map<string, string[] | string>();
  if (!o.offline && slugs.length > 0) {
    const client = createUpstreamClient({
      baseUrl: config.upstream.baseUrl,
      apiKey: config.upstream.apiKey,
      timeoutMs: config.upstream.timeoutMs,
    });
    try {
      for (const slug of slugs) {
        try {
          const res = await client.services({ category: slug });
          resolved.set(
            slug,
            res.data.services.map((s) => s.feedId),
          );
        } catch (err) {
          resolved.set(
            slug,
            `could not resolve: ${redactText(toError(err).message, secretValues(config))}`,
          );
        }
      }
    } finally {
      await client.close();
    }
  }

  lines.push(`subscriptions (${config.subscriptions.length}):`);
  for (const sub of config.subscriptions) {
    lines.push(`  ${sub.name} → ${sub.channels.join(', ')}`);
    lines.push(`    events: ${sub.events.join(', ')}`);
    const services = sub.services;
    if (services.includes('*')) lines.push('    services: all (*)');
    else if (services.length > 0) lines.push(`    services: ${services.join(', ')}`);
    for (const slug of sub.categories) {
      const r = resolved.get(slug);
      if (r === undefined) lines.push(`    category ${slug}: not resolved (offline)`);
      else if (typeof r === 'string') lines.push(`    category ${slug}: ${r}`);
      else
        lines.push(
          `    category ${slug}: ${r.length} services${r.length > 0 ? ` (${r.slice(0, 10).join(', ')}${r.length > 10 ? ', …' : ''})` : ''}`,
        );
    }
    const extras: string[] = [];
    if (sub.group !== undefined) extras.push(`group ${formatInterval(sub.group)}`);
    if (sub.repeat !== undefined) extras.push(`repeat ${formatInterval(sub.repeat)}`);
    if (sub.quietHours !== undefined) {
      const windows = sub.quietHours.windows.map((w) => w.text).join(', ');
      const except =
        sub.quietHours.except.length > 0 ? `, except ${sub.quietHours.except.join(', ')}` : '';
      extras.push(`quiet hours ${windows} (${sub.quietHours.timezone}${except})`);
    }
    if (sub.digest !== undefined)
      extras.push(`digest ${sub.digest.schedule} (${sub.digest.timezone})`);
    if (extras.length > 0) {
      lines.push(`    ${extras.join('; ')}`);
    }
  }
  lines.push('');

  lines.push(
    `request plan (budget ${plan.budget}/min, plan may use ${formatRate(plan.allowed)}/min):`,
  );
  for (const l of plan.lines) {
    const when =
      l.source === 'confirmations'
        ? `up to ${String(plan.confirmationsPerCycle)} per incidents poll, only while a vanished incident waits`
        : '';
    lines.push(
      `  ${l.name.padEnd(22)} every ${formatInterval(l.intervalMs).padEnd(5)} ${formatRate(l.requestsPerMinute).padStart(6)}/min${when === '' ? '' : `  (${when})`}`,
    );
  }
  lines.push(
    `  ${'total'.padEnd(28)} ${formatRate(plan.total).padStart(6)}/min  ${plan.ok ? 'OK' : 'OVER BUDGET'}`,
  );
  if (!plan.ok) lines.push('', `error: ${describeOverBudget(plan)}`);
  return { ok: plan.ok, text: `${lines.join('\n')}\n` };
}
