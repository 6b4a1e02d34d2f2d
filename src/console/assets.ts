/**
 * The console's two static files, served by the daemon from memory (`/static/console.css`,
 * `/static/console.js`): no frontend build, nothing inline (the CSP allows neither inline script
 * nor inline style). The script only enhances: every page works without it.
 *
 * What the script does:
 * - a `<main data-refresh="N">` page re-fetches itself every N seconds (while visible) and swaps
 *   each `[data-live][id]` element for the fresh one, so the overview and a service's timeline
 *   follow new incidents without a manual reload;
 * - `input[data-catalog]` searches the catalog as one types (`/catalog?format=json`) and offers
 *   "Add" buttons that append a feedId to the input named by `data-target`;
 * - `button[data-preview]` (and any change in its form) asks the server for the preview region
 *   named by `data-preview` and swaps it in.
 * All text from the server is inserted with `textContent` or as parsed server-escaped HTML; no
 * `innerHTML` of strings, no `eval`.
 */

export const CONSOLE_CSS = String.raw`
:root {
  color-scheme: light dark;
  --bg: #ffffff; --fg: #1b1f24; --muted: #59636e; --line: #d1d9e0; --panel: #f6f8fa;
  --link: #0b5cad; --focus: #bf5700;
  --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --worse: #82071e; --info: #0969da; --unknown: #6e7781;
  --ok-bg: #dafbe1; --warn-bg: #fff8c5; --bad-bg: #ffebe9; --info-bg: #ddf4ff; --unknown-bg: #eaeef2;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --line: #3d444d; --panel: #151b23;
    --link: #4493f8; --focus: #f0883e;
    --ok: #3fb950; --warn: #d29922; --bad: #f85149; --worse: #ff7b72; --info: #58a6ff; --unknown: #9198a1;
    --ok-bg: #12261e; --warn-bg: #272115; --bad-bg: #301a1f; --info-bg: #121d2f; --unknown-bg: #21262d;
  }
}
* { box-sizing: border-box; }
html { font-size: 16px; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; }
a { color: var(--link); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible, summary:focus-visible {
  outline: 3px solid var(--focus); outline-offset: 2px; }
.skip { position: absolute; left: -999px; top: 0; background: var(--bg); padding: .5rem; z-index: 10; }
.skip:focus { left: .5rem; }
header.top { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.25rem; padding: .6rem 1rem;
  border-bottom: 1px solid var(--line); background: var(--panel); }
header.top .brand { font-weight: 700; text-decoration: none; color: var(--fg); }
nav.main ul { display: flex; flex-wrap: wrap; gap: .25rem .9rem; list-style: none; margin: 0; padding: 0; }
nav.main a { text-decoration: none; padding: .2rem .1rem; }
nav.main a[aria-current="page"] { font-weight: 700; border-bottom: 2px solid var(--link); }
header.top .who { margin-left: auto; display: flex; gap: .6rem; align-items: center; color: var(--muted); }
main { padding: 1rem; max-width: 1400px; margin: 0 auto; }
h1 { font-size: 1.5rem; margin: .2rem 0 .8rem; }
h2 { font-size: 1.15rem; margin: 1.6rem 0 .6rem; }
.muted { color: var(--muted); }
.row { display: flex; flex-wrap: wrap; gap: .75rem; align-items: end; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: .75rem; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: .6rem .8rem; background: var(--panel); }
.card h3 { margin: 0 0 .3rem; font-size: .95rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .45rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: .85rem; color: var(--muted); font-weight: 600; }
td.num { font-variant-numeric: tabular-nums; white-space: nowrap; }
.badge { display: inline-block; padding: .05rem .5rem; border-radius: 999px; font-size: .82rem; font-weight: 600;
  border: 1px solid currentColor; white-space: nowrap; }
.badge.st-operational, .badge.o-sent, .badge.h-ok, .badge.sla-met { color: var(--ok); background: var(--ok-bg); }
.badge.st-degraded, .badge.st-maintenance, .badge.o-retrying, .badge.o-sending, .badge.sla-at_risk { color: var(--warn); background: var(--warn-bg); }
.badge.st-partial_outage, .badge.o-dead, .badge.h-degraded, .badge.sla-breached { color: var(--bad); background: var(--bad-bg); }
.badge.st-major_outage { color: var(--worse); background: var(--bad-bg); }
.badge.st-unknown, .badge.o-not_sent, .badge.o-routing, .badge.h-unknown, .badge.sla-unknown, .badge.s-expired { color: var(--unknown); background: var(--unknown-bg); }
.badge.s-active { color: var(--info); background: var(--info-bg); }
.badge.s-pending { color: var(--warn); background: var(--warn-bg); }
.neg { color: var(--bad); font-weight: 600; }
.incidents { margin: 0; padding-left: 1.1rem; }
svg { max-width: 100%; height: auto; }
svg.spark { vertical-align: middle; }
svg rect.nodata { fill: var(--unknown-bg); }
svg .spark-line, svg .line { fill: none; stroke: var(--info); stroke-width: 1.6; }
svg .spark-dot { fill: var(--info); }
svg .grid { stroke: var(--line); stroke-width: .5; }
svg .axis { stroke: var(--muted); stroke-width: 1; }
svg .zero { stroke: var(--bad); stroke-dasharray: 4 3; stroke-width: 1; }
svg .tick { fill: var(--muted); font-size: 10px; }
svg rect.st-operational { fill: var(--ok); } svg rect.st-degraded, svg rect.st-maintenance { fill: var(--warn); }
svg rect.st-partial_outage { fill: var(--bad); } svg rect.st-major_outage { fill: var(--worse); }
svg rect.st-unknown { fill: var(--unknown); }
figure.chart { margin: .5rem 0 1rem; }
figure.chart figcaption { font-weight: 600; margin-bottom: .25rem; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 520px), 1fr)); gap: .5rem 1.5rem; }
.charts figure.band { grid-column: 1 / -1; }
ol.timeline { list-style: none; padding: 0; margin: 0; }
ol.timeline > li { border-left: 3px solid var(--line); padding: .2rem 0 .8rem .8rem; margin-left: .3rem; }
ol.timeline > li.open { border-left-color: var(--bad); }
ol.steps { margin: .3rem 0 0; padding-left: 1.1rem; }
.deliveries { list-style: none; padding: 0; margin: 0; }
.deliveries li { margin: .1rem 0; }
form.inline { display: inline; }
label { display: block; font-weight: 600; font-size: .9rem; margin: .4rem 0 .15rem; }
fieldset { border: 1px solid var(--line); border-radius: 8px; margin: .6rem 0; padding: .4rem .8rem .7rem; }
fieldset label.check { display: inline-flex; gap: .3rem; font-weight: 400; margin-right: .9rem; }
input[type="text"], input[type="search"], input[type="password"], select, textarea {
  font: inherit; color: inherit; background: var(--bg); border: 1px solid var(--line); border-radius: 6px;
  padding: .4rem .5rem; min-width: 12rem; max-width: 100%; }
textarea { width: 100%; min-height: 9rem; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
button, .button { font: inherit; cursor: pointer; border-radius: 6px; border: 1px solid var(--line);
  background: var(--panel); color: var(--fg); padding: .35rem .8rem; text-decoration: none; display: inline-block; }
button.primary { background: var(--link); border-color: var(--link); color: #fff; }
button.danger { color: var(--bad); border-color: var(--bad); }
.notice { border: 1px solid var(--line); border-left: 4px solid var(--info); background: var(--panel); padding: .6rem .8rem; border-radius: 6px; margin: .6rem 0; }
.notice.error { border-left-color: var(--bad); }
.notice.ok { border-left-color: var(--ok); }
pre { white-space: pre-wrap; word-break: break-word; background: var(--panel); border: 1px solid var(--line); padding: .6rem; border-radius: 6px; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .9em; }
.login { max-width: 26rem; margin: 3rem auto; }
.catalog-results { list-style: none; padding: 0; }
.catalog-results li { display: flex; gap: .5rem; align-items: center; margin: .2rem 0; }
.updated { font-size: .85rem; color: var(--muted); }
@media (max-width: 720px) {
  main { padding: .6rem; }
  header.top .who { margin-left: 0; }
  table.responsive thead { display: none; }
  table.responsive, table.responsive tbody, table.responsive tr, table.responsive td { display: block; width: 100%; }
  table.responsive tr { border: 1px solid var(--line); border-radius: 8px; margin-bottom: .6rem; padding: .3rem .5rem; }
  table.responsive td { border: 0; padding: .2rem 0; }
  table.responsive td[data-label]::before { content: attr(data-label) ": "; font-weight: 600; color: var(--muted); }
  input[type="text"], input[type="search"], input[type="password"], select { width: 100%; }
}
`;

export const CONSOLE_JS = String.raw`
(() => {
  'use strict';
  const parse = (text) => new DOMParser().parseFromString(text, 'text/html');

  // Live regions: re-fetch this page and swap every [data-live][id] element.
  const main = document.querySelector('main[data-refresh]');
  if (main) {
    const every = Math.max(2, Number(main.getAttribute('data-refresh')) || 15) * 1000;
    let busy = false;
    const refresh = async () => {
      if (busy || document.hidden) return;
      busy = true;
      try {
        const res = await fetch(location.href, { headers: { accept: 'text/html' }, credentials: 'same-origin' });
        if (!res.ok || new URL(res.url).pathname !== location.pathname) return;
        const doc = parse(await res.text());
        for (const fresh of doc.querySelectorAll('[data-live][id]')) {
          const old = document.getElementById(fresh.id);
          if (!old || old.contains(document.activeElement)) continue;
          old.replaceWith(document.adoptNode(fresh));
        }
      } catch (e) {
        // The next round tries again.
      } finally {
        busy = false;
      }
    };
    setInterval(refresh, every);
  }

  // Catalog search: "Add" buttons append a feedId to the target input.
  for (const input of document.querySelectorAll('input[data-catalog]')) {
    const list = document.getElementById(input.getAttribute('data-catalog'));
    const target = document.getElementById(input.getAttribute('data-target'));
    if (!list || !target) continue;
    let timer = null;
    const search = async () => {
      const q = input.value.trim();
      const res = await fetch('/catalog?format=json&query=' + encodeURIComponent(q), { credentials: 'same-origin' });
      if (!res.ok) return;
      const body = await res.json();
      list.replaceChildren();
      for (const s of body.services) {
        const li = document.createElement('li');
        const button = document.createElement('button');
        button.type = 'button';
        button.textContent = 'Add';
        button.setAttribute('aria-label', 'Add ' + s.name + ' (' + s.feedId + ')');
        button.addEventListener('click', () => {
          const have = target.value.split(/[\s,]+/).filter(Boolean);
          if (!have.includes(s.feedId)) have.push(s.feedId);
          target.value = have.join(', ');
          target.dispatchEvent(new Event('change', { bubbles: true }));
        });
        const label = document.createElement('span');
        label.textContent = s.name + ' (' + s.feedId + ')';
        li.append(button, label);
        list.append(li);
      }
    };
    input.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(search, 200);
    });
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        search();
      }
    });
  }

  // Previews: ask the server for the region and swap it in.
  for (const button of document.querySelectorAll('button[data-preview]')) {
    const form = button.form;
    const region = button.getAttribute('data-preview');
    if (!form || !region) continue;
    const preview = async () => {
      const body = new URLSearchParams(new FormData(form));
      const res = await fetch(button.getAttribute('formaction') || form.action, {
        method: 'POST',
        body,
        headers: { accept: 'text/html' },
        credentials: 'same-origin',
      });
      const fresh = parse(await res.text()).getElementById(region);
      const old = document.getElementById(region);
      if (fresh && old) old.replaceWith(document.adoptNode(fresh));
    };
    button.addEventListener('click', (e) => {
      e.preventDefault();
      preview();
    });
    let timer = null;
    form.addEventListener('change', () => {
      clearTimeout(timer);
      timer = setTimeout(preview, 250);
    });
  }
})();
`;
