/**
 * Self-service pages (subscriptions, channels through the API of #13), the feeds page and the
 * audit log. Same rules as pages.ts: everything through `html`, real forms, CSRF on every POST.
 */
import { EVENT_KINDS } from '../config/events.js';
import { html, join, responsiveTable, type Html } from './html.js';
import { checks, csrfField, layout, time, type Frame } from './pages.js';
import type { AuditRow, ObjectView } from './selfservice.js';

function list(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function owner(o: ObjectView): Html {
  return o.source === 'config'
    ? html`<span class="muted">config file (read-only)</span>`
    : html`team ${o.team ?? '?'}`;
}

export function unavailablePage(frame: Frame, what: string): Html {
  return layout(
    frame,
    html`<h1>${what}</h1>
      <p class="muted">
        ${what} are managed through the subscriptions API (/api/v1), which this daemon does not run.
      </p>`,
  );
}

/** The owning team: asked of admins only (a team's objects are its own). */
function teamField(id: string, value: string, shown: boolean, fixed: boolean): Html {
  if (!shown) return html``;
  return html`<label for="${id}">Team (owner)</label
    ><input
      type="text"
      id="${id}"
      name="team"
      value="${value}"
      required${fixed ? html` readonly` : html``}
    />`;
}

export interface SubscriptionFormValues {
  mode: 'create' | 'put';
  name: string;
  services: string;
  categories: string;
  events: string[];
  channels: string[];
  group: string;
  repeat: string;
  /** The owning team (admins name it; a team's own is implied). */
  team: string;
}

export function subscriptionFormOf(view: ObjectView | null): SubscriptionFormValues {
  if (view === null)
    return {
      mode: 'create',
      name: '',
      services: '',
      categories: '',
      events: [],
      channels: [],
      group: '',
      repeat: '',
      team: '',
    };
  return {
    mode: 'put',
    name: view.name,
    services: list(view.services).join(', '),
    categories: list(view.categories).join(', '),
    events: list(view.events),
    channels: list(view.channels),
    group: text(view.group),
    repeat: text(view.repeat),
    team: view.team ?? '',
  };
}

function issuesBlock(issues: readonly string[]): Html {
  return issues.length === 0
    ? html``
    : html`<div class="notice error" role="alert">
        <ul>
          ${join(issues.map((i) => html`<li>${i}</li>`))}
        </ul>
      </div>`;
}

export function subscriptionsPage(
  frame: Frame,
  o: {
    subscriptions: readonly ObjectView[];
    channels: readonly string[];
    form: SubscriptionFormValues;
    issues: readonly string[];
    search: { query: string; services: { feedId: string; name: string }[] } | null;
    team: string | null;
  },
): Html {
  const rows = o.subscriptions.map(
    (s) =>
      html`<tr data-subscription="${s.name}">
        <td data-label="Name"><strong>${s.name}</strong></td>
        <td data-label="Owner">${owner(s)}</td>
        <td data-label="Watches">
          ${list(s.services).join(', ')}${list(s.categories).length === 0 ? '' : html`<div class="muted">categories: ${list(s.categories).join(', ')}</div>`}
        </td>
        <td data-label="Events">
          ${list(s.events).length === EVENT_KINDS.length ? 'all' : list(s.events).join(', ')}
        </td>
        <td data-label="Channels">${list(s.channels).join(', ')}</td>
        <td>
          ${
            s.source === 'api'
              ? html`<a class="button" href="/subscriptions?edit=${encodeURIComponent(s.name)}"
                    >Edit</a
                  >
                  <form
                    class="inline"
                    method="post"
                    action="/subscriptions/${encodeURIComponent(s.name)}/delete"
                  >
                    ${csrfField(frame.identity)}<button type="submit" class="danger">Delete</button>
                  </form>`
              : ''
          }
        </td>
      </tr>`,
  );
  const f = o.form;
  const search =
    o.search === null
      ? html``
      : html`<p class="muted">Catalog matches for “${o.search.query}”:</p>
          <ul>
            ${join(o.search.services.map((s) => html`<li><code>${s.feedId}</code> ${s.name}</li>`))}
          </ul>`;
  return layout(
    frame,
    html`<h1>Subscriptions</h1>
      <div id="subscription-list" data-live>
        ${
          o.subscriptions.length === 0
            ? html`<p class="muted">No subscriptions yet.</p>`
            : responsiveTable(
                [
                  'Name',
                  'Owner',
                  'Watches',
                  'Events',
                  'Channels',
                  html`<span class="muted">Actions</span>`,
                ],
                rows,
              )
        }
      </div>
      <h2>${f.mode === 'create' ? 'New subscription' : html`Edit ${f.name}`}</h2>
      ${issuesBlock(o.issues)}
      <form method="get" action="/subscriptions" role="search" class="row">
        <div>
          <label for="catalog-q">Search the catalog</label
          ><input
            type="search"
            id="catalog-q"
            name="q"
            value="${o.search?.query ?? ''}"
            data-catalog="catalog-results"
            data-target="sub-services"
            autocomplete="off"
          />
        </div>
        <div><button type="submit">Search</button></div>
      </form>
      <ul id="catalog-results" class="catalog-results" aria-live="polite"></ul>
      ${search}
      <form method="post" action="/subscriptions" id="subscription-form">
        ${csrfField(frame.identity)}
        <input type="hidden" name="mode" value="${f.mode}" />
        <label for="sub-name">Name</label>
        <input
          type="text"
          id="sub-name"
          name="name"
          value="${f.name}"
          required${f.mode === 'put' ? html` readonly` : html``}
        />
        ${teamField('sub-team', f.team, o.team === null, f.mode === 'put')}
        <label for="sub-services">Services (feedIds, comma-separated, or *)</label>
        <input
          type="text"
          id="sub-services"
          name="services"
          value="${f.services}"
          autocomplete="off"
        />
        <label for="sub-categories">Categories (slugs, comma-separated)</label>
        <input
          type="text"
          id="sub-categories"
          name="categories"
          value="${f.categories}"
          autocomplete="off"
        />
        <fieldset>
          <legend>Events (none ticked: every event)</legend>
          ${checks('events', EVENT_KINDS, f.events)}
        </fieldset>
        <fieldset>
          <legend>Channels</legend>
          ${o.channels.length === 0 ? html`<span class="muted">No channels yet: create one first.</span>` : checks('channels', o.channels, f.channels)}
        </fieldset>
        <div class="row">
          <div>
            <label for="sub-group">Group window (e.g. 30s, optional)</label
            ><input type="text" id="sub-group" name="group" value="${f.group}" />
          </div>
          <div>
            <label for="sub-repeat">Reminders every (e.g. 4h, optional)</label
            ><input type="text" id="sub-repeat" name="repeat" value="${f.repeat}" />
          </div>
        </div>
        <p>
          <button type="submit" class="primary">
            ${f.mode === 'create' ? 'Create subscription' : 'Save'}</button
          >${f.mode === 'put' ? html` <a href="/subscriptions">Cancel</a>` : ''}
        </p>
      </form> `,
  );
}

export interface ChannelFormValues {
  mode: 'create' | 'put';
  name: string;
  type: string;
  fields: string;
  team: string;
}

export function channelFormOf(view: ObjectView | null): ChannelFormValues {
  if (view === null)
    return {
      mode: 'create',
      name: '',
      type: 'webhook',
      fields: '{\n  "url": "https://…",\n  "secret": "whsec_…"\n}',
      team: '',
    };
  const { name, team, source: _source, type, ...fields } = view;
  return {
    mode: 'put',
    name,
    type: text(type),
    fields: JSON.stringify(fields, null, 2),
    team: team ?? '',
  };
}

export function channelsPage(
  frame: Frame,
  o: {
    channels: readonly ObjectView[];
    types: readonly string[];
    form: ChannelFormValues;
    issues: readonly string[];
    preview: { name: string; event: string; text: string } | null;
    result: { ok: boolean; message: string } | null;
    admin: boolean;
  },
): Html {
  const rows = o.channels.map(
    (c) =>
      html`<tr data-channel="${c.name}">
        <td data-label="Name"><strong>${c.name}</strong></td>
        <td data-label="Type">${text(c.type)}</td>
        <td data-label="Owner">${owner(c)}</td>
        <td>
          <form class="inline" method="get" action="/channels">
            <input type="hidden" name="preview" value="${c.name}" /><label
              class="check"
              for="ev-${c.name}"
              >Preview</label
            ><select id="ev-${c.name}" name="event">
              ${join(EVENT_KINDS.map((k) => html`<option value="${k}">${k}</option>`))}
            </select>
            <button type="submit">Show</button>
          </form>
          <form class="inline" method="post" action="/channels/${encodeURIComponent(c.name)}/test">
            ${csrfField(frame.identity)}<button type="submit">Send test</button>
          </form>
          ${
            c.source === 'api'
              ? html`<a class="button" href="/channels?edit=${encodeURIComponent(c.name)}">Edit</a>
                  <form
                    class="inline"
                    method="post"
                    action="/channels/${encodeURIComponent(c.name)}/delete"
                  >
                    ${csrfField(frame.identity)}<button type="submit" class="danger">Delete</button>
                  </form>`
              : ''
          }
        </td>
      </tr>`,
  );
  const f = o.form;
  return layout(
    frame,
    html`<h1>Channels</h1>
      ${o.result === null ? '' : html`<div class="notice ${o.result.ok ? 'ok' : 'error'}" role="status"><pre>${o.result.message}</pre></div>`}
      ${
        o.preview === null
          ? ''
          : html`<h2>Preview of ${o.preview.name} for ${o.preview.event}</h2>
              <pre>${o.preview.text}</pre>`
      }
      <div id="channel-list">
        ${
          o.channels.length === 0
            ? html`<p class="muted">No channels.</p>`
            : responsiveTable(
                ['Name', 'Type', 'Owner', html`<span class="muted">Actions</span>`],
                rows,
              )
        }
      </div>
      <h2>${f.mode === 'create' ? 'New channel' : html`Edit ${f.name}`}</h2>
      ${issuesBlock(o.issues)}
      <form method="post" action="/channels" id="channel-form">
        ${csrfField(frame.identity)}
        <input type="hidden" name="mode" value="${f.mode}" />
        <div class="row">
          <div>
            <label for="ch-name">Name</label
            ><input
              type="text"
              id="ch-name"
              name="name"
              value="${f.name}"
              required${f.mode === 'put' ? html` readonly` : html``}
            />
          </div>
          ${o.admin ? html`<div>${teamField('ch-team', f.team, true, f.mode === 'put')}</div>` : ''}
          <div>
            <label for="ch-type">Type</label
            ><select id="ch-type" name="type">
              ${join(o.types.map((t) => html`<option value="${t}" ${t === f.type ? html` selected` : html``}>${t}</option>`))}
            </select>
          </div>
        </div>
        <label for="ch-fields"
          >Fields (JSON, as in the config file; secrets shown as &lt;set&gt; are kept)</label
        >
        <textarea id="ch-fields" name="fields" spellcheck="false">${f.fields}</textarea>
        <p>
          <button type="submit" class="primary">
            ${f.mode === 'create' ? 'Create channel' : 'Save'}</button
          >${f.mode === 'put' ? html` <a href="/channels">Cancel</a>` : ''}
        </p>
      </form>`,
  );
}

export function feedsPage(
  frame: Frame,
  o: {
    subscriptions: readonly string[];
    feeds: ReadonlyMap<string, number>;
    created: { subscription: string; url: string } | null;
  },
): Html {
  const rows = o.subscriptions.map((s) => {
    const since = o.feeds.get(s);
    return html`<tr data-feed-sub="${s}">
      <td data-label="Subscription"><code>${s}</code></td>
      <td data-label="Feed">
        ${since === undefined ? html`<span class="muted">no feed</span>` : html`secret URL since ${time(since)}`}
      </td>
      <td>
        <form class="inline" method="post" action="/feeds/${encodeURIComponent(s)}/rotate">
          ${csrfField(frame.identity)}<button type="submit">
            ${since === undefined ? 'Create URL' : 'Rotate URL'}
          </button>
        </form>
        ${since === undefined ? '' : html` <form class="inline" method="post" action="/feeds/${encodeURIComponent(s)}/revoke">${csrfField(frame.identity)}<button type="submit" class="danger">Revoke</button></form>`}
      </td>
    </tr>`;
  });
  return layout(
    frame,
    html`<h1>Atom feeds</h1>
      <p>
        Each subscription can have an Atom feed of its transitions at a secret URL (for feed
        readers; no login). Rotating makes the old URL stop working at once. The URL is shown once.
      </p>
      ${o.created === null ? '' : html`<div class="notice ok" role="status">Feed URL for <code>${o.created.subscription}</code> (copy it now; it is not shown again):<br /><code id="feed-url">${o.created.url}</code></div>`}
      ${
        o.subscriptions.length === 0
          ? html`<p class="muted">No subscriptions.</p>`
          : responsiveTable(
              ['Subscription', 'Feed', html`<span class="muted">Actions</span>`],
              rows,
            )
      }`,
  );
}

function value(v: unknown): string {
  return v === undefined ? '∅' : JSON.stringify(v);
}

export function auditPage(
  frame: Frame,
  o: { entries: readonly AuditRow[] | null; next: string | null },
): Html {
  if (o.entries === null)
    return layout(
      frame,
      html`<h1>Audit log</h1>
        <p class="muted">
          The audit log comes with the subscriptions API (/api/v1), which this daemon does not run.
        </p>`,
    );
  const rows = o.entries.map(
    (e) =>
      html`<tr>
        <td data-label="When">${time(e.at)}</td>
        <td data-label="Who">
          <code>${e.tokenId}</code
          >${e.actorTeam === null ? '' : html` <span class="muted">(team ${e.actorTeam})</span>`}
          <div class="muted">${e.address}</div>
        </td>
        <td data-label="What">
          ${e.action} ${e.kind} <strong>${e.name}</strong>
          <span class="muted">(team ${e.team})</span>
        </td>
        <td data-label="Changes">
          ${
            e.diff.length === 0
              ? html`<span class="muted">—</span>`
              : html`<ul class="incidents">
                  ${join(e.diff.map((d) => html`<li><code>${d.field}</code>: ${value(d.from)} → ${value(d.to)}</li>`))}
                </ul>`
          }
        </td>
      </tr>`,
  );
  return layout(
    frame,
    html`<h1>Audit log</h1>
      ${
        o.entries.length === 0
          ? html`<p class="muted">No changes recorded.</p>`
          : responsiveTable(['When', 'Who', 'What', 'Changes'], rows)
      }
      ${o.next === null ? '' : html`<p><a href="/audit?before=${encodeURIComponent(o.next)}">Older entries</a></p>`}`,
  );
}
