import { describe, expect, it } from 'vitest';
import { esc, href, html, join, responsiveTable, safeHref } from './html.js';
import { time } from './pages.js';

const HOSTILE = `<script>alert(1)</script><img src=x onerror="alert(2)"> 'quoted' & javascript:alert(3)`;

describe('html', () => {
  it('escapes every interpolated value, in text and in attributes', () => {
    const out = html`<p title="${HOSTILE}">${HOSTILE}</p>`.text;
    expect(out).not.toContain('<script>');
    expect(out).not.toContain('<img');
    expect(out).not.toContain('"alert(2)"');
    expect(out).toBe(
      `<p title="${esc(HOSTILE)}">&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;alert(2)&quot;&gt; &#39;quoted&#39; &amp; javascript:alert(3)</p>`,
    );
  });

  it('nests html values without escaping them twice; lists, numbers, absent values', () => {
    const inner = html`<b>${'<i>'}</b>`;
    expect(html`<p>${inner}</p>`.text).toBe('<p><b>&lt;i&gt;</b></p>');
    expect(html`${[1, '<', inner]}|${null}|${undefined}|${false}|${0}`.text).toBe(
      '1&lt;<b>&lt;i&gt;</b>||||0',
    );
    expect(join(['<a>', html`<br />`], ', ').text).toBe('&lt;a&gt;, <br />');
  });

  it('links only to absolute http(s) URLs', () => {
    expect(safeHref('https://status.example.com/x?a=1')).toBe('https://status.example.com/x?a=1');
    expect(safeHref('http://example.com')).toBe('http://example.com/');
    for (const bad of [
      'javascript:alert(1)',
      'JaVaScRiPt:alert(1)',
      ' javascript:alert(1)',
      'data:text/html,<script>',
      '/relative',
      '//evil.example',
      'vbscript:x',
      '',
      null,
      undefined,
    ])
      expect(safeHref(bad)).toBeNull();
  });

  it('builds local links with encoded queries', () => {
    expect(href('/', { subscription: 'a&b', limit: 5, x: undefined, y: '' })).toBe(
      '/?subscription=a%26b&limit=5',
    );
    expect(href('/notifications')).toBe('/notifications');
  });

  it('builds a responsive table: headers escaped unless Html, rows as given', () => {
    const table = responsiveTable(
      ['<Name>', html`<span class="muted">Actions</span>`],
      [
        html`<tr>
          <td data-label="Name">a</td>
        </tr>`,
        html`<tr>
          <td data-label="Name">b</td>
        </tr>`,
      ],
    ).text.replace(/>\s+</g, '><');
    expect(table).toBe(
      '<table class="responsive"><thead><tr><th scope="col">&lt;Name&gt;</th><th scope="col"><span class="muted">Actions</span></th></tr></thead><tbody><tr><td data-label="Name">a</td></tr><tr><td data-label="Name">b</td></tr></tbody></table>',
    );
  });
});

describe('time', () => {
  it('writes a time stored before later ones were refused (a silence ending in the year 285000) as the latest allowed, not a failed page', () => {
    expect(time(9_000_000_000_000_000).text).toContain('datetime="9999-12-31T23:59:59.999Z"');
    expect(time(Date.UTC(2026, 10, 27, 14, 0)).text).toContain(
      'datetime="2026-11-27T14:00:00.000Z"',
    );
  });
});
