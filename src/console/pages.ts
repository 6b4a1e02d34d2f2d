/**
 * The console's pages: pure functions from the loaded data (data.ts) to `Html`. Every value goes
 * through the `html` tag (html.ts), so upstream text is always text; links to upstream pages pass
 * `safeHref`. Forms are real forms (they work without JavaScript) and every POST form carries the
 * CSRF token.
 */
import { LATEST_TIME_MS } from '../silences/model.js';
import { transitionAnchor } from '../notify/links.js';
import { EVENT_KINDS } from '../config/events.js';
import {
  eventLabel,
  formatDuration,
  formatMargin,
  formatNumber,
  formatUtc,
} from '../notify/text.js';
import type { DeadLetter } from '../delivery/queue.js';
import type { Silence } from '../silences/model.js';
import { stateOf } from '../silences/match.js';
import { thin } from '../history/series.js';
import {
  html,
  join,
  responsiveTable,
  safeHref,
  href,
  type Html,
  type Interpolation,
} from './html.js';
import { lineChart, sparkline, statusBand, statusSegments } from './svg.js';
import type {
  DeliveryRow,
  DeliveryView,
  EpisodeAck,
  IncidentTimeline,
  Notifications,
  Overview,
  RoutePreview,
  ServicePage,
  ServiceRow,
  TransitionView,
  UpstreamView,
} from './data.js';
import type { Identity } from './auth.js';

export type NavKey =
  | 'overview'
  | 'notifications'
  | 'silences'
  | 'subscriptions'
  | 'channels'
  | 'feeds'
  | 'audit'
  | 'none';

const NAV: { key: NavKey; path: string; label: string }[] = [
  { key: 'overview', path: '/', label: 'Overview' },
  { key: 'notifications', path: '/notifications', label: 'Notifications' },
  { key: 'silences', path: '/silences', label: 'Silences' },
  { key: 'subscriptions', path: '/subscriptions', label: 'Subscriptions' },
  { key: 'channels', path: '/channels', label: 'Channels' },
  { key: 'feeds', path: '/feeds', label: 'Feeds' },
  { key: 'audit', path: '/audit', label: 'Audit' },
];

export interface Frame {
  identity: Identity | null;
  nav: NavKey;
  title: string;
  /** Seconds between live refreshes of the page's `[data-live]` regions. */
  refresh?: number;
  notice?: { kind: 'ok' | 'error' | 'info'; text: Interpolation } | undefined;
}

export function csrfField(identity: Identity | null): Html {
  return identity?.csrf === null || identity === null
    ? html``
    : html`<input type="hidden" name="csrf" value="${identity.csrf}" />`;
}

export function layout(frame: Frame, body: Html): Html {
  const id = frame.identity;
  const who =
    id === null
      ? html``
      : html`<div class="who">
          <span
            >${id.viewer.label ?? id.viewer.id} ·
            ${id.viewer.team === null ? 'admin' : `team ${id.viewer.team}`}</span
          >${
            id.method === 'session'
              ? html`<form class="inline" method="post" action="/logout">
                  ${csrfField(id)}<button type="submit">Log out</button>
                </form>`
              : html``
          }
        </div>`;
  const nav =
    id === null
      ? html``
      : html`<nav class="main" aria-label="Main">
          <ul>
            ${join(
              NAV.map(
                (n) =>
                  html`<li>
                    <a href="${n.path}" ${n.key === frame.nav ? html` aria-current="page"` : html``}
                      >${n.label}</a
                    >
                  </li>`,
              ),
            )}
          </ul>
        </nav>`;
  const notice =
    frame.notice === undefined
      ? html``
      : html`<div
          class="notice ${frame.notice.kind}"
          role="${frame.notice.kind === 'error' ? 'alert' : 'status'}"
        >
          ${frame.notice.text}
        </div>`;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${frame.title} · statuswatch</title>
        <link rel="stylesheet" href="/static/console.css" />
        <script src="/static/console.js" defer></script>
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header class="top"><a class="brand" href="/">statuswatch</a>${nav}${who}</header>
        <main
          id="main"
          ${frame.refresh === undefined ? html`` : html` data-refresh="${frame.refresh}"`}
        >
          ${notice}${body}
        </main>
      </body>
    </html> `;
}

// ---------------------------------------------------------------------------------------------
// Small parts

export function time(ms: number | null): Html {
  if (ms === null || !Number.isFinite(ms)) return html`<span class="muted">never</span>`;
  // A time stored before later ones were refused (a silence ending in the year 285000) is
  // shown as the latest a page writes, not a failed page.
  const at = Math.min(ms, LATEST_TIME_MS);
  return html`<time datetime="${new Date(at).toISOString()}">${formatUtc(at)}</time>`;
}

function ago(ms: number | null, now: number): string {
  if (ms === null) return 'never';
  const d = formatDuration(now - ms);
  return d === null ? 'just now' : `${d} ago`;
}

function words(s: string | null): string {
  return s === null ? 'unknown' : s.replace(/_/g, ' ');
}

function cls(s: string): string {
  return s.replace(/[^a-z_]/g, '');
}

export function statusBadge(status: string | null): Html {
  const s = status ?? 'unknown';
  return html`<span class="badge st-${cls(s)}">${words(s)}</span>`;
}

function slaCell(sla: ServiceRow['sla']): Html {
  if (sla === null) return html`<span class="muted">—</span>`;
  const margin =
    sla.margin === null
      ? html``
      : html` <span class="${sla.margin < 0 ? 'neg' : ''}">${formatMargin(sla.margin)}</span>`;
  return html`<span class="badge sla-${cls(sla.status)}">${words(sla.status)}</span>${margin}`;
}

function scoreText(score: ServiceRow['score']): string {
  if (score === null) return '—';
  return `${formatNumber(score.score)}${score.grade === null ? '' : ` (${score.grade})`}`;
}

function serviceLink(feedId: string, name: string): Html {
  return html`<a href="/services/${encodeURIComponent(feedId)}">${name}</a>`;
}

function outcomeBadge(d: Pick<DeliveryView, 'outcome' | 'reason' | 'attempts'>): Html {
  const label: Record<DeliveryView['outcome'], string> = {
    sent: 'sent',
    sending: 'sending',
    retrying: 'retrying',
    dead: 'dead letter',
    not_sent: 'not sent',
    routing: 'routing',
  };
  const attempts =
    d.attempts === null ? '' : ` after ${String(d.attempts)} attempt${d.attempts === 1 ? '' : 's'}`;
  const reason =
    d.reason === null ? html`` : html` <span class="muted">${d.reason}${attempts}</span>`;
  return html`<span class="badge o-${d.outcome}">${label[d.outcome]}</span>${reason}`;
}

// ---------------------------------------------------------------------------------------------
// Overview

function upstreamCards(list: readonly UpstreamView[], now: number): Html {
  return html`<div class="cards" id="upstream" data-live>
    ${join(
      list.map(
        (u) =>
          html`<div class="card">
            <h3>${u.kind} poll</h3>
            <p>
              <span class="badge h-${cls(u.health)}"
                >${u.health === 'ok' ? 'healthy' : u.health}</span
              >${u.reason === null ? '' : html` <span class="muted">${u.reason}</span>`}
            </p>
            <p class="muted">
              last success:
              ${u.lastOk === null ? 'never' : html`${time(u.lastOk)} (${ago(u.lastOk, now)})`}${u.remaining === null ? '' : html`<br />rate limit: ${u.remaining} of ${u.limit ?? '?'} left`}
            </p>
          </div>`,
      ),
    )}
  </div>`;
}

export function overviewTable(o: Overview): Html {
  const rows = o.services.map((s) => {
    const incidents =
      s.openIncidents.length === 0
        ? html`<span class="muted">none</span>`
        : html`<ul class="incidents">
            ${join(s.openIncidents.slice(0, 3).map((i) => html`<li>${i.title} <span class="muted">(${words(i.status)})</span></li>`))}${s.openIncidents.length > 3 ? html`<li class="muted">and ${s.openIncidents.length - 3} more</li>` : ''}
          </ul>`;
    const spark = sparkline(thin(s.spark, 60), {
      from: o.generatedAt - 30 * 86_400_000,
      to: o.generatedAt,
      label: `${s.name}: score over 30 days`,
    });
    return html`<tr data-feed="${s.feedId}">
      <td data-label="Service">${serviceLink(s.feedId, s.name)}</td>
      <td data-label="Status">${statusBadge(s.status)}</td>
      <td data-label="Open incidents">${incidents}</td>
      <td data-label="SLA margin" class="num">${slaCell(s.sla)}</td>
      <td data-label="Score" class="num">${scoreText(s.score)} ${spark}</td>
      <td data-label="Subscriptions">${s.subscriptions.join(', ')}</td>
    </tr>`;
  });
  const more =
    o.total > o.shown
      ? html`<p class="muted">
          Showing the ${o.shown} most troubled of ${o.total} services.
          <a href="${href('/', { subscription: o.subscription, limit: 5000 })}">Show all</a>
        </p>`
      : html``;
  return html`<div id="services" data-live>
    <p class="updated">Updated ${time(o.generatedAt)}</p>
    ${
      o.services.length === 0
        ? html`<p class="muted">None of your subscriptions watches a service yet.</p>`
        : responsiveTable(
            [
              'Service',
              'Status',
              'Open incidents',
              'SLA margin',
              'Score (30 days)',
              'Subscriptions',
            ],
            rows,
          )
    }
    ${more}
  </div>`;
}

export function overviewPage(frame: Frame, o: Overview): Html {
  const options = o.subscriptions.map(
    (s) =>
      html`<option value="${s}" ${s === o.subscription ? html` selected` : html``}>${s}</option>`,
  );
  return layout(
    frame,
    html`<h1>Overview</h1>
      <form class="row" method="get" action="/" role="search">
        <div>
          <label for="subscription">Subscription</label
          ><select id="subscription" name="subscription">
            <option value="">all of yours</option>
            ${join(options)}
          </select>
        </div>
        <div><button type="submit">Filter</button></div>
      </form>
      <h2>Upstream</h2>
      ${upstreamCards(o.upstream, o.generatedAt)}
      <h2>Services, most troubled first</h2>
      ${overviewTable(o)}`,
  );
}

// ---------------------------------------------------------------------------------------------
// Service page

function deliveriesList(list: readonly DeliveryView[]): Html {
  if (list.length === 0) return html`<span class="muted">not routed to your subscriptions</span>`;
  return html`<ul class="deliveries">
    ${join(
      list.map(
        (d) =>
          html`<li>
            <code>${d.subscription}</code> → <code>${d.channel}</code>: ${outcomeBadge(d)}
          </li>`,
      ),
    )}
  </ul>`;
}

export function transitionsTable(list: readonly TransitionView[], id = 'transitions'): Html {
  if (list.length === 0)
    return html`<div id="${id}" data-live><p class="muted">No transitions recorded yet.</p></div>`;
  return html`<div id="${id}" data-live>
    ${responsiveTable(
      ['Observed', 'Event', 'What', 'Sent to'],
      list.map(
        (t) =>
          html`<tr id="${transitionAnchor(t.id)}">
            <td data-label="Observed">${time(t.at)}</td>
            <td data-label="Event">${eventLabel(t.kind)}</td>
            <td data-label="What">${t.text}</td>
            <td data-label="Sent to">${deliveriesList(t.deliveries)}</td>
          </tr>`,
      ),
    )}
  </div>`;
}

/**
 * The acknowledgement of an open incident per subscription told of it: who, when and through
 * what, or an Acknowledge button (a POST with the session's CSRF token; `/acks` acts through the
 * API's path and comes back here).
 */
function ackList(acks: readonly EpisodeAck[], identity: Identity | null): Html {
  if (acks.length === 0) return html``;
  return html`<ul class="acks">
    ${join(
      acks.map((e) =>
        e.ack === null
          ? html`<li data-ack="${e.subscription}">
              ${e.subscription}: not acknowledged
              <form class="inline" method="post" action="/acks">
                ${csrfField(identity)}<input
                  type="hidden"
                  name="subscription"
                  value="${e.subscription}"
                /><input type="hidden" name="service" value="${e.service}" /><input
                  type="hidden"
                  name="subject"
                  value="${e.subject}"
                /><button type="submit">Acknowledge</button>
              </form>
            </li>`
          : html`<li data-ack="${e.subscription}">
              ${e.subscription}: acknowledged by ${e.ack.name ?? e.ack.by} at ${time(e.ack.at)} (via
              ${e.ack.via})
            </li>`,
      ),
    )}
  </ul>`;
}

function timelineList(list: readonly IncidentTimeline[], identity: Identity | null): Html {
  if (list.length === 0)
    return html`<div id="timeline" data-live>
      <p class="muted">No incidents in the last 90 days.</p>
    </div>`;
  return html`<div id="timeline" data-live>
    <ol class="timeline">
      ${join(
        list.map(
          (i) =>
            html`<li class="${i.open ? 'open' : 'resolved'}">
              <strong>${i.title}</strong>
              ${i.open ? html`<span class="badge st-partial_outage">open</span>` : html`<span class="badge st-operational">resolved</span>`}
              <div class="muted">
                opened
                ${time(i.openedAt)}${i.resolvedAt === null ? html`, open for ${formatDuration(i.durationMs) ?? '?'}` : html`, resolved ${time(i.resolvedAt)} after ${formatDuration(i.durationMs) ?? '?'}`}
              </div>
              ${i.open ? ackList(i.acks, identity) : html``}
              ${
                i.steps.length === 0
                  ? html``
                  : html`<ol class="steps">
                      ${join(i.steps.map((s) => html`<li>${time(s.at)} ${eventLabel(s.kind)}${s.status === null ? '' : html` (${words(s.status)})`}${s.update === null ? '' : html`: ${s.update}`}</li>`))}
                    </ol>`
              }
            </li>`,
        ),
      )}
    </ol>
  </div>`;
}

export function servicePage(frame: Frame, p: ServicePage): Html {
  const official = safeHref(p.officialStatusUrl);
  const canonical = safeHref(p.canonicalUrl);
  const links = [
    official === null
      ? null
      : html`<a href="${official}" rel="noopener noreferrer">official status page</a>`,
    canonical === null ? null : html`<a href="${canonical}" rel="noopener noreferrer">website</a>`,
  ].filter((l): l is Html => l !== null);
  const segments = statusSegments(p.statusBefore, p.statusChanges, p.from, p.to);
  return layout(
    frame,
    html`<p><a href="/">← Overview</a></p>
      <h1>${p.name} <span class="muted">(${p.feedId})</span></h1>
      <div id="summary" data-live class="cards">
        <div class="card">
          <h3>Status</h3>
          ${statusBadge(p.status)}
        </div>
        <div class="card">
          <h3>SLA</h3>
          ${slaCell(p.sla)}
        </div>
        <div class="card">
          <h3>Score</h3>
          ${scoreText(p.score)}
        </div>
        <div class="card">
          <h3>Watched by</h3>
          ${p.subscriptions.length === 0 ? html`<span class="muted">none of your subscriptions</span>` : p.subscriptions.join(', ')}
        </div>
      </div>
      ${links.length === 0 ? '' : html`<p>${join(links, ' · ')}</p>`}
      <h2>Incidents</h2>
      ${timelineList(p.incidents, frame.identity)}
      <h2>History</h2>
      <div class="charts" id="charts" data-live>
        ${statusBand(segments, { from: p.from, to: p.to, title: 'Status, last 30 days' })}
        ${lineChart(p.slaSamples, { from: p.to - 90 * 86_400_000, to: p.to, title: 'SLA margin, last 90 days', unit: ' pp', zero: true })}
        ${lineChart(p.scoreSamples, { from: p.to - 90 * 86_400_000, to: p.to, title: 'Score, last 90 days' })}
      </div>
      <h2>Transitions and what was sent</h2>
      ${transitionsTable(p.transitions)}`,
  );
}

// ---------------------------------------------------------------------------------------------
// Notifications

function select(
  name: string,
  label: string,
  values: readonly string[],
  current: string | undefined,
): Html {
  return html`<div>
    <label for="f-${name}">${label}</label
    ><select id="f-${name}" name="${name}">
      <option value="">any</option>
      ${join(
        values.map(
          (v) =>
            html`<option value="${v}" ${v === current ? html` selected` : html``}>${v}</option>`,
        ),
      )}
    </select>
  </div>`;
}

function deliveryRows(list: readonly DeliveryRow[]): Html {
  if (list.length === 0) return html`<p class="muted">No deliveries match.</p>`;
  return responsiveTable(
    ['Routed', 'Service', 'Event', 'Route', 'Outcome'],
    list.map(
      (d) =>
        html`<tr>
          <td data-label="Routed">${time(d.at)}</td>
          <td data-label="Service">${serviceLink(d.feedId, d.service)}</td>
          <td data-label="Event">
            ${eventLabel(d.kind)}
            <div class="muted">${d.text}</div>
          </td>
          <td data-label="Route"><code>${d.subscription}</code> → <code>${d.channel}</code></td>
          <td data-label="Outcome">${outcomeBadge(d)}</td>
        </tr>`,
    ),
  );
}

function deadLetterRows(list: readonly DeadLetter[], frame: Frame): Html {
  if (list.length === 0) return html`<p class="muted">No dead letters.</p>`;
  return responsiveTable(
    ['Failed', 'Route', 'Events', 'Reason', html`<span class="muted">Action</span>`],
    list.map(
      (d) =>
        html`<tr data-dead="${d.id}">
          <td data-label="Failed">${time(d.failedAt)}</td>
          <td data-label="Route"><code>${d.subscription}</code> → <code>${d.channel}</code></td>
          <td data-label="Events">${d.kinds.join(', ')}</td>
          <td data-label="Reason">
            ${d.failedReason}
            <span class="muted">(${d.attempts} attempt${d.attempts === 1 ? '' : 's'})</span>
          </td>
          <td>
            <form class="inline" method="post" action="/notifications/retry">
              ${csrfField(frame.identity)}<input type="hidden" name="id" value="${d.id}" /><button
                type="submit"
              >
                Retry
              </button>
            </form>
          </td>
        </tr>`,
    ),
  );
}

export function notificationsPage(frame: Frame, n: Notifications): Html {
  const f = n.filters;
  return layout(
    frame,
    html`<h1>Notifications</h1>
      <form class="row" method="get" action="/notifications" role="search">
        ${select('subscription', 'Subscription', n.subscriptions, f.subscription)}
        ${select('channel', 'Channel', n.channels, f.channel)}
        ${select('outcome', 'Outcome', ['sent', 'sending', 'retrying', 'dead', 'not_sent'], f.outcome)}
        ${select('kind', 'Event', EVENT_KINDS, f.kind)}
        <div>
          <label for="f-service">Service (feedId)</label
          ><input type="text" id="f-service" name="service" value="${f.service ?? ''}" />
        </div>
        <div><button type="submit">Filter</button></div>
      </form>
      <h2>Dead letters</h2>
      <div id="dead" data-live>${deadLetterRows(n.deadLetters, frame)}</div>
      <h2>Recent deliveries (7 days)</h2>
      <div id="deliveries" data-live>
        <p class="updated">Updated ${time(n.generatedAt)}</p>
        ${deliveryRows(n.deliveries)}
      </div>`,
  );
}

// ---------------------------------------------------------------------------------------------
// Silences

export interface SilenceForm {
  services: string;
  events: string[];
  subscriptions: string[];
  channels: string[];
  duration: string;
  comment: string;
}

export const EMPTY_SILENCE_FORM: SilenceForm = {
  services: '',
  events: [],
  subscriptions: [],
  channels: [],
  duration: '2h',
  comment: '',
};

/** Longest prefilled text field (the services list, the duration, the comment). */
const PREFILL_MAX = 4000;

/**
 * The create form prefilled from a "silence…" link of a notification (`src/notify/links.ts`):
 * `services` (comma-separated feedIds), `events`, `subscriptions` and `channels` (repeated),
 * `duration`, `comment`. Null when the query names none of them (the empty form). Nothing is
 * created: the visitor confirms with the form's submit, and the POST checks everything again.
 * Unknown event kinds are dropped; every value is escaped when the page is rendered.
 */
export function prefilledSilenceForm(query: URLSearchParams): SilenceForm | null {
  const keys = ['services', 'events', 'subscriptions', 'channels', 'duration', 'comment'];
  if (!keys.some((key) => query.has(key))) return null;
  const text = (key: string, fallback: string): string =>
    (query.get(key) ?? fallback).slice(0, PREFILL_MAX);
  const list = (key: string): string[] => [
    ...new Set(query.getAll(key).filter((v) => v !== '' && v.length <= PREFILL_MAX)),
  ];
  const kinds: readonly string[] = EVENT_KINDS;
  return {
    services: text('services', ''),
    events: list('events').filter((kind) => kinds.includes(kind)),
    subscriptions: list('subscriptions'),
    channels: list('channels'),
    duration: text('duration', EMPTY_SILENCE_FORM.duration),
    comment: text('comment', ''),
  };
}

/** A checkbox per value (form field `name`), the `checked` ones ticked. */
export function checks(name: string, values: readonly string[], checked: readonly string[]): Html {
  return join(
    values.map(
      (v, i) =>
        html`<label class="check" for="${name}-${i}"
          ><input
            type="checkbox"
            id="${name}-${i}"
            name="${name}"
            value="${v}"
            ${checked.includes(v) ? html` checked` : html``}
          />${v}</label
        >`,
    ),
  );
}

/**
 * The choices plus any ticked value that is not among them (a prefilled link naming another
 * team's subscription): shown ticked, so submitting is refused with the usual "not your team's"
 * instead of silently widening to every subscription of the team.
 */
function withChecked(values: readonly string[], checked: readonly string[]): string[] {
  return [...values, ...checked.filter((v) => !values.includes(v))];
}

export function previewRegion(
  preview: readonly RoutePreview[] | null,
  issues: readonly string[] = [],
): Html {
  const body =
    issues.length > 0
      ? html`<div class="notice error" role="alert">
          <ul>
            ${join(issues.map((i) => html`<li>${i}</li>`))}
          </ul>
        </div>`
      : preview === null
        ? html`<p class="muted">
            Choose matchers and press Preview to see which routes the silence would match right now.
          </p>`
        : preview.length === 0
          ? html`<p><strong>It would match no route right now.</strong></p>`
          : html`<p>
                It would match
                <strong>${preview.length}</strong> route${preview.length === 1 ? '' : 's'} right
                now:
              </p>
              ${responsiveTable(
                ['Route', 'Services', 'Events', 'Open incidents'],
                preview.map(
                  (r) =>
                    html`<tr>
                      <td data-label="Route">
                        <code>${r.subscription}</code> → <code>${r.channel}</code>
                      </td>
                      <td data-label="Services">
                        ${r.services}${r.examples.length === 0 ? '' : html` <span class="muted">(${r.examples.join(', ')}${r.services > r.examples.length ? ', …' : ''})</span>`}
                      </td>
                      <td data-label="Events">${r.events.join(', ')}</td>
                      <td data-label="Open incidents" class="num">${r.openIncidents}</td>
                    </tr>`,
                ),
              )}`;
  return html`<div id="silence-preview" aria-live="polite">${body}</div>`;
}

export function silencesPage(
  frame: Frame,
  o: {
    silences: readonly Silence[];
    now: number;
    subscriptions: readonly string[];
    channels: readonly string[];
    form: SilenceForm;
    preview: readonly RoutePreview[] | null;
    issues: readonly string[];
    team: boolean;
    /** The cursor of the next page of silences (null: this is the last). */
    next?: string | null;
  },
): Html {
  const rows = o.silences.map((s) => {
    const state = stateOf(s, o.now);
    const m = s.matchers;
    const matchers = [
      m.services === undefined ? null : `services: ${m.services.join(', ')}`,
      m.events === undefined ? null : `events: ${m.events.join(', ')}`,
      m.subscriptions === undefined ? null : `subscriptions: ${m.subscriptions.join(', ')}`,
      m.channels === undefined ? null : `channels: ${m.channels.join(', ')}`,
    ].filter((x): x is string => x !== null);
    return html`<tr data-silence="${s.id}">
      <td data-label="State"><span class="badge s-${state}">${state}</span></td>
      <td data-label="Matchers">${join(matchers.map((x) => html`<div>${x}</div>`))}</td>
      <td data-label="Until">${time(s.endsAt)}</td>
      <td data-label="By">
        ${s.author}
        <div class="muted">${s.comment}</div>
      </td>
      <td>
        ${state === 'expired' ? '' : html`<form class="inline" method="post" action="/silences/${encodeURIComponent(s.id)}/expire">${csrfField(frame.identity)}<button type="submit" class="danger">Expire</button></form>`}
      </td>
    </tr>`;
  });
  const f = o.form;
  return layout(
    frame,
    html`<h1>Silences</h1>
      <div id="silences" data-live>
        ${
          o.silences.length === 0
            ? html`<p class="muted">No silences.</p>`
            : responsiveTable(
                ['State', 'Matchers', 'Until', 'By', html`<span class="muted">Action</span>`],
                rows,
              )
        }
        ${
          o.next === undefined || o.next === null
            ? ''
            : html`<p><a href="/silences?cursor=${encodeURIComponent(o.next)}">Next page</a></p>`
        }
      </div>
      <h2>New silence</h2>
      <form method="post" action="/silences" id="silence-form">
        ${csrfField(frame.identity)}
        <label for="s-services">Services (feedIds, comma-separated; empty: every service)</label>
        <input
          type="text"
          id="s-services"
          name="services"
          value="${f.services}"
          autocomplete="off"
        />
        <fieldset>
          <legend>Events (none ticked: every event)</legend>
          ${checks('events', EVENT_KINDS, f.events)}
        </fieldset>
        <fieldset>
          <legend>
            Subscriptions (none ticked: ${o.team ? 'all of your team’s' : 'every subscription'})
          </legend>
          ${checks('subscriptions', withChecked(o.subscriptions, f.subscriptions), f.subscriptions)}
        </fieldset>
        <fieldset>
          <legend>Channels (none ticked: every channel)</legend>
          ${checks('channels', withChecked(o.channels, f.channels), f.channels)}
        </fieldset>
        <div class="row">
          <div>
            <label for="s-duration">Duration</label
            ><input type="text" id="s-duration" name="duration" value="${f.duration}" required />
          </div>
          <div>
            <label for="s-comment">Comment</label
            ><input type="text" id="s-comment" name="comment" value="${f.comment}" />
          </div>
        </div>
        <p class="row">
          <button type="submit" formaction="/silences/preview" data-preview="silence-preview">
            Preview
          </button>
          <button type="submit" class="primary">Create silence</button>
        </p>
      </form>
      ${previewRegion(o.preview, o.issues)}`,
  );
}

// ---------------------------------------------------------------------------------------------
// Login, errors

export function loginPage(
  frame: Frame,
  o: { loginCsrf: string; next: string; error?: string },
): Html {
  return layout(
    frame,
    html`<div class="login">
      <h1>Log in</h1>
      <p>
        Paste an API token (a team token or the admin token). It is exchanged for a session cookie;
        the token itself is not kept.
      </p>
      ${o.error === undefined ? '' : html`<div class="notice error" role="alert">${o.error}</div>`}
      <form method="post" action="/login">
        <input type="hidden" name="csrf" value="${o.loginCsrf}" />
        <input type="hidden" name="next" value="${o.next}" />
        <label for="token">Token</label>
        <input
          type="password"
          id="token"
          name="token"
          autocomplete="current-password"
          required
          autofocus
        />
        <p><button type="submit" class="primary">Log in</button></p>
      </form>
    </div>`,
  );
}

export function errorPage(frame: Frame, status: number, message: string): Html {
  return layout(
    frame,
    html`<h1>${status === 404 ? 'Not found' : status === 403 ? 'Forbidden' : 'Error'}</h1>
      <p>${message}</p>
      <p><a href="/">Back to the overview</a></p>`,
  );
}
