/**
 * HTML built with one tagged template: every interpolated value goes through `escapeHtml`
 * (src/notify/text.ts) unless it is itself the output of `html` (an `Html` value). There is no
 * other way to put text into a page, so upstream strings (service names, incident titles and
 * updates, links) are always text. Links from upstream pass `safeHref` (http and https only).
 */
import { escapeHtml } from '../notify/text.js';

/** Markup built by `html` (never from a plain string). */
export class Html {
  /** Only `html` and `join` create these. */
  private constructor(readonly text: string) {}

  static trusted(text: string): Html {
    return new Html(text);
  }

  toString(): string {
    return this.text;
  }
}

export type Interpolation =
  Html | string | number | boolean | null | undefined | readonly Interpolation[];

/** The one escaping function: every value that is not already `Html` is escaped. */
export function esc(value: Interpolation): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return (value as readonly Interpolation[]).map(esc).join('');
  return escapeHtml(String(value));
}

/** The HTML template tag: `html\`<td>${title}</td>\`` escapes `title`. */
export function html(strings: TemplateStringsArray, ...values: Interpolation[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += esc(value) + (strings[i + 1] ?? '');
  });
  return Html.trusted(out);
}

/** Items joined by a separator (both escaped unless `Html`). */
export function join(items: readonly Interpolation[], separator: Interpolation = ''): Html {
  return Html.trusted(items.map(esc).join(esc(separator)));
}

/** The URL when it is an absolute http(s) URL, else null: never a `javascript:` or `data:` link. */
export function safeHref(url: string | null | undefined): string | null {
  if (typeof url !== 'string' || !URL.canParse(url)) return null;
  const parsed = new URL(url);
  return (parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.hostname !== ''
    ? parsed.href
    : null;
}

/** A path of this console with a query string built from `params` (absent values left out). */
export function href(
  path: string,
  params: Record<string, string | number | undefined | null> = {},
): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const text = q.toString();
  return text === '' ? path : `${path}?${text}`;
}

/**
 * A table whose rows stack into labelled cards at phone width (`class="responsive"`: each cell
 * carries `data-label`, its column's name). `headers` name the columns (an `Html` header, such as
 * a muted actions column, is used as it is); `rows` are the `<tr>` elements.
 */
export function responsiveTable(headers: readonly Interpolation[], rows: readonly Html[]): Html {
  return html`<table class="responsive">
    <thead>
      <tr>
        ${join(headers.map((h) => html`<th scope="col">${h}</th>`))}
      </tr>
    </thead>
    <tbody>
      ${join(rows)}
    </tbody>
  </table>`;
}
