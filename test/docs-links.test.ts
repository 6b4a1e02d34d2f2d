/**
 * The front door and the docs hold together: every relative link in README.md and docs/ points at
 * a file that exists (and, with a `#fragment`, at a heading of that file, slugged as GitHub does),
 * and README.md stays a front door (about 200 lines; reference material lives in docs/).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownFiles(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set(
    text
      .split('\n')
      .filter((line) => /^#{1,6} /.test(line))
      .map((line) => slug(line.replace(/^#+ /, ''))),
  );
}

/** Every `[text](target)` and `![alt](target)` outside code blocks and inline code. */
function linksOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
    .replace(/```[\s\S]*?```/g, '')
    .replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] ?? '');
}

const FILES = [join(ROOT, 'README.md'), ...markdownFiles(join(ROOT, 'docs'))];

describe('docs', () => {
  it('the slug rule matches GitHub on the headings used here', () => {
    expect(slug('Quick start')).toBe('quick-start');
    expect(slug('The tenancy API (`/api/v1`)')).toBe('the-tenancy-api-apiv1');
    expect(slug('Webhook delivery (Standard Webhooks)')).toBe('webhook-delivery-standard-webhooks');
  });

  it.each(FILES.map((f) => [relative(ROOT, f), f]))(
    '%s: every relative link resolves',
    (_, file) => {
      const broken: string[] = [];
      for (const target of linksOf(file)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
        const [path = '', fragment] = target.split('#');
        const to = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
        if (!existsSync(to)) {
          broken.push(`${target} (no such file)`);
          continue;
        }
        if (fragment !== undefined && to.endsWith('.md') && !anchorsOf(to).has(fragment))
          broken.push(`${target} (no such heading)`);
      }
      expect(broken).toEqual([]);
    },
  );

  it('README.md is a front door: about 200 lines at most', () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length;
    expect(lines).toBeLessThanOrEqual(220);
  });
});
