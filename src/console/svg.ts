/**
 * Charts as inline SVG rendered on the server (readable without JavaScript): a sparkline, a line
 * chart with time and value axes, and a status band. Pure: points in, `Html` out. Colours come
 * from CSS classes (the CSP allows no inline style).
 */
import { html, join, type Html } from './html.js';

export type Point = readonly [number, number];

const DAY = 86_400_000;

function fixed(n: number): string {
  return (Math.round(n * 10) / 10).toString();
}

/** A value for people: at most two decimals. */
function label(n: number): string {
  return (Math.round(n * 100) / 100).toString();
}

function scale(domain: [number, number], range: [number, number]): (v: number) => number {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  const span = d1 - d0 === 0 ? 1 : d1 - d0;
  return (v) => r0 + ((v - d0) / span) * (r1 - r0);
}

function extent(values: readonly number[], pad = 0): [number, number] {
  if (values.length === 0) return [0, 1];
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (lo === hi) {
    lo -= 1;
    hi += 1;
  }
  const p = (hi - lo) * pad;
  return [lo - p, hi + p];
}

function pathOf(
  points: readonly Point[],
  x: (v: number) => number,
  y: (v: number) => number,
): string {
  return points.map(([t, v], i) => `${i === 0 ? 'M' : 'L'}${fixed(x(t))} ${fixed(y(v))}`).join(' ');
}

/** A small trend line (e.g. the score over 30 days), with its last point marked. */
export function sparkline(
  points: readonly Point[],
  o: { from: number; to: number; label: string; width?: number; height?: number },
): Html {
  const width = o.width ?? 120;
  const height = o.height ?? 28;
  if (points.length === 0)
    return html`<span class="spark-empty" title="${o.label}">no samples yet</span>`;
  const x = scale([o.from, o.to], [2, width - 2]);
  const y = scale(
    extent(
      points.map((p) => p[1]),
      0.1,
    ),
    [height - 2, 2],
  );
  const last = points[points.length - 1] ?? points[0];
  const lastMark =
    last === undefined
      ? html``
      : html`<circle
          class="spark-dot"
          cx="${fixed(x(last[0]))}"
          cy="${fixed(y(last[1]))}"
          r="2"
        ></circle>`;
  return html`<svg
    class="spark"
    viewBox="0 0 ${width} ${height}"
    width="${width}"
    height="${height}"
    role="img"
    aria-label="${o.label}"
  >
    <title>${o.label}</title>
    <path class="spark-line" d="${pathOf(points, x, y)}"></path>
    ${lastMark}
  </svg>`;
}

function dateTick(ms: number): string {
  return new Date(ms).toISOString().slice(5, 10);
}

/** A line chart over [from, to] with a date axis and min/max labels; `zero` draws the y = 0 line. */
export function lineChart(
  points: readonly Point[],
  o: {
    from: number;
    to: number;
    title: string;
    unit?: string;
    zero?: boolean;
    width?: number;
    height?: number;
  },
): Html {
  const width = o.width ?? 640;
  const height = o.height ?? 180;
  const left = 48;
  const bottom = 22;
  const top = 8;
  const right = 8;
  const unit = o.unit ?? '';
  if (points.length === 0) {
    return html`<figure class="chart">
      <figcaption>${o.title}</figcaption>
      <p class="muted">No samples recorded yet.</p>
    </figure>`;
  }
  const values = points.map((p) => p[1]);
  const domain = extent(o.zero === true ? [...values, 0] : values, 0.08);
  const x = scale([o.from, o.to], [left, width - right]);
  const y = scale(domain, [height - bottom, top]);
  const ticks: Html[] = [];
  const days = Math.max(1, Math.round((o.to - o.from) / DAY));
  const stepDays = days <= 10 ? 1 : days <= 40 ? 7 : 30;
  for (let t = o.to; t >= o.from; t -= stepDays * DAY) {
    ticks.push(
      html`<line
          class="grid"
          x1="${fixed(x(t))}"
          x2="${fixed(x(t))}"
          y1="${top}"
          y2="${height - bottom}"
        ></line
        ><text
          class="tick"
          x="${fixed(Math.min(width - right - 14, Math.max(left + 14, x(t))))}"
          y="${height - 6}"
          text-anchor="middle"
          >${dateTick(t)}</text
        >`,
    );
  }
  const zeroLine =
    o.zero === true && domain[0] < 0 && domain[1] > 0
      ? html`<line
          class="zero"
          x1="${left}"
          x2="${width - right}"
          y1="${fixed(y(0))}"
          y2="${fixed(y(0))}"
        ></line>`
      : html``;
  const [lo, hi] = [Math.min(...values), Math.max(...values)];
  const last = points[points.length - 1];
  const summary = `${o.title}: ${String(points.length)} samples, from ${label(lo)}${unit} to ${label(hi)}${unit}${last === undefined ? '' : `, latest ${label(last[1])}${unit}`}`;
  return html`<figure class="chart">
    <figcaption>${o.title}</figcaption>
    <svg viewBox="0 0 ${width} ${height}" role="img" aria-label="${summary}">
      <title>${summary}</title>
      ${join(ticks)}
      <line class="axis" x1="${left}" x2="${left}" y1="${top}" y2="${height - bottom}"></line>
      <text
        class="tick"
        x="${left - 4}"
        y="${fixed(y(hi))}"
        text-anchor="end"
        dominant-baseline="middle"
      >
        ${label(hi)}${unit}
      </text>
      <text
        class="tick"
        x="${left - 4}"
        y="${fixed(y(lo))}"
        text-anchor="end"
        dominant-baseline="middle"
      >
        ${label(lo)}${unit}
      </text>
      ${zeroLine}
      <path class="line" d="${pathOf(points, x, y)}"></path>
      ${join(points.length === 1 && last !== undefined ? [html`<circle class="spark-dot" cx="${fixed(x(last[0]))}" cy="${fixed(y(last[1]))}" r="3"></circle>`] : [])}
    </svg>
  </figure>`;
}

/** Segments of a status over [from, to]: the status held from each change until the next. */
export function statusSegments(
  initial: string | null,
  changes: readonly { at: number; status: string }[],
  from: number,
  to: number,
): { from: number; to: number; status: string }[] {
  const out: { from: number; to: number; status: string }[] = [];
  let status = initial;
  let start = from;
  for (const c of changes) {
    if (c.at < from) {
      status = c.status;
      continue;
    }
    if (c.at > to) break;
    if (status !== null && c.at > start) out.push({ from: start, to: c.at, status });
    status = c.status;
    start = Math.max(from, c.at);
  }
  if (status !== null && to > start) out.push({ from: start, to, status });
  return out;
}

/** The status over time as coloured bands, with a text list for screen readers. */
export function statusBand(
  segments: readonly { from: number; to: number; status: string }[],
  o: { from: number; to: number; title: string; width?: number },
): Html {
  const width = o.width ?? 1200;
  const height = 40;
  if (segments.length === 0) {
    return html`<figure class="chart band">
      <figcaption>${o.title}</figcaption>
      <p class="muted">No status recorded yet.</p>
    </figure>`;
  }
  const x = scale([o.from, o.to], [0, width]);
  const first = segments[0];
  const gap =
    first !== undefined && first.from > o.from
      ? html`<rect class="nodata" x="0" y="4" width="${fixed(x(first.from))}" height="20"
          ><title>no data recorded</title></rect
        >`
      : html``;
  const rects = segments.map(
    (s) =>
      html`<rect
        class="st-${s.status.replace(/[^a-z_]/g, '')}"
        x="${fixed(Math.min(x(s.from), width - 3))}"
        y="4"
        width="${fixed(Math.max(3, x(s.to) - x(s.from)))}"
        height="20"
        ><title>${s.status.replace(/_/g, ' ')} from ${new Date(s.from).toISOString()}</title></rect
      >`,
  );
  const ticks: Html[] = [];
  const days = Math.max(1, Math.round((o.to - o.from) / DAY));
  const stepDays = days <= 10 ? 1 : 7;
  for (let t = o.to; t >= o.from; t -= stepDays * DAY) {
    ticks.push(
      html`<text
        class="tick"
        x="${fixed(Math.min(width - 16, Math.max(16, x(t))))}"
        y="${height - 2}"
        text-anchor="middle"
        >${dateTick(t)}</text
      >`,
    );
  }
  const text = segments
    .map(
      (s) => `${s.status.replace(/_/g, ' ')} from ${new Date(s.from).toISOString().slice(0, 16)}Z`,
    )
    .join('; ');
  return html`<figure class="chart band">
    <figcaption>${o.title}</figcaption>
    <svg viewBox="0 0 ${width} ${height}" role="img" aria-label="${text}">
      <title>${text}</title>
      ${gap}${join(rects)}${join(ticks)}
    </svg>
  </figure>`;
}
