/**
 * One owner per Redis key (src/redis/keyspace.ts): every key a source file builds belongs to a
 * family of the table, and is built only in the family's owner (or a listed exception); every
 * family is built somewhere; a store's key object (`apiKeys`) is used in its store only;
 * docs/architecture.md's "Key table" is the table.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KEYSPACE, familyName, keyTableMarkdown, type KeyFamily } from '../src/redis/keyspace.js';

const ROOT = join(import.meta.dirname, '..');
const FAMILIES: readonly KeyFamily[] = Object.values(KEYSPACE);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The text without comments (block comments, and whole-line `//` comments), lines kept. */
function code(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ''))
    .replace(/^\s*\/\/.*$/gm, '');
}

type Arg = { literal: string } | { spread: true } | { variable: true };

/**
 * Walks from the bracket at `open` to its match, strings and nested brackets skipped: `onTop` sees
 * each index at the top level; returns the match's index (the text's length when there is none).
 */
function walkBracket(
  text: string,
  open: number,
  onTop: (i: number) => void = () => undefined,
): number {
  let depth = 0;
  let quote: string | null = null;
  for (let i = open + 1; i < text.length; i++) {
    const c = text[i];
    if (quote !== null) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
      continue;
    }
    if (c === "'" || c === '"' || c === '`') quote = c;
    else if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      if (depth === 0) return i;
      depth--;
    } else if (depth === 0) onTop(i);
  }
  return text.length;
}

/** The arguments of the call whose `(` is at `open`, split at top-level commas. */
function argsAt(text: string, open: number): string[] {
  const args: string[] = [];
  let start = open + 1;
  const close = walkBracket(text, open, (i) => {
    if (text[i] !== ',') return;
    args.push(text.slice(start, i).trim());
    start = i + 1;
  });
  args.push(text.slice(start, close).trim());
  return args.filter((a) => a !== '');
}

function parseArg(arg: string): Arg[] {
  if (arg.startsWith('...')) return [{ spread: true }];
  const m = /^(['"`])([^'"`$\\]*)\1$/.exec(arg);
  if (m === null) return [{ variable: true }];
  // A literal with colons is several parts.
  return (m[2] ?? '').split(':').map((literal) => ({ literal }));
}

const isVarying = (part: string): boolean => part.startsWith('<') && part.endsWith('>');

/** Whether a call with these arguments may build a key of the family. */
function mayBuild(f: KeyFamily, args: readonly Arg[]): boolean {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as Arg;
    const part = f.parts[i];
    if (part === '*') return true;
    if ('spread' in a) return true;
    if (part === undefined) return false;
    if ('literal' in a && !isVarying(part) && a.literal !== part) return false;
  }
  return args.length === f.parts.length || f.parts[args.length] === '*';
}

const buildsIn = (f: KeyFamily, file: string): boolean =>
  f.owner === file || (f.sharedWith ?? []).some((s) => s.file === file);

interface Site {
  file: string;
  line: number;
  text: string;
  families: KeyFamily[];
}

const FIRST_PARTS = [...new Set(FAMILIES.map((f) => f.parts[0] as string))];

/**
 * Every `key(...)` call with a literal first part in `source` (the text of `file`), and every
 * `':snap:'`-style literal (a string that starts with `:<first part>`, or has it right after a
 * tag's `}`).
 */
function sitesOf(file: string, source: string): Site[] {
  const sites: Site[] = [];
  const text = code(source);
  const lineOf = (i: number): number => text.slice(0, i).split('\n').length;
  for (const m of text.matchAll(/\.key\(/g)) {
    const open = m.index + m[0].length - 1;
    const args = argsAt(text, open).flatMap(parseArg);
    if (args[0] === undefined || !('literal' in args[0])) continue;
    const call = text.slice(m.index, text.indexOf(')', open) + 1);
    sites.push({
      file,
      line: lineOf(m.index),
      text: call,
      families: FAMILIES.filter((f) => mayBuild(f, args)),
    });
  }
  // A key spelled out after a tag or a colon: `${tag}:snap:…`, ':routed'.
  for (const m of text.matchAll(/(['"`])([^'"`\n]*?)\1/g)) {
    const body = m[2] ?? '';
    for (const first of FIRST_PARTS) {
      const re = new RegExp(`(?:^|\\}):${first.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')}(?::|$)`);
      if (!re.test(body)) continue;
      sites.push({
        file,
        line: lineOf(m.index),
        text: m[0],
        families: FAMILIES.filter((f) => f.parts[0] === first),
      });
    }
  }
  return sites.sort((a, b) => a.line - b.line);
}

function keySites(paths: readonly string[]): Site[] {
  return paths.flatMap((path) => sitesOf(relative(ROOT, path), readFileSync(path, 'utf8')));
}

/** The text of the `{…}` block opening at `open` (strings and nesting skipped). */
function blockAt(text: string, open: number): string {
  return text.slice(open, walkBracket(text, open) + 1);
}

/**
 * A store's key object: an exported function whose body returns an object literal of keys
 * (`export function apiKeys(keys) { return { version: keys.key('api', 'version'), … } }`).
 * Handing it (or its result) to another file lets that file read the store's keys directly.
 */
function keyObjectFunctions(source: string): string[] {
  const text = code(source);
  const names: string[] = [];
  for (const m of text.matchAll(/export function (\w+)\s*\(/g)) {
    const close = text.indexOf(')', m.index);
    const brace = text.indexOf('{', close);
    const body = blockAt(text, brace);
    const returned = /^\{\s*return\s*\{/.exec(body);
    if (returned === null) continue;
    const object = blockAt(body, returned[0].length - 1);
    const values = object
      .slice(1, -1)
      .split(/,\s*(?=\w+\s*:)/)
      .map((entry) => entry.replace(/^\s*\w+\s*:\s*/, '').trim())
      .filter((v) => v !== '');
    if (values.length > 0 && values.every((v) => /^\w+\.key\(/.test(v))) names.push(m[1] ?? '');
  }
  return names;
}

/** Every use of another file's key-object function in `source` (the text of `file`). */
function keyObjectUses(
  file: string,
  source: string,
  owners: ReadonlyMap<string, string>,
): string[] {
  const text = code(source);
  const uses: string[] = [];
  for (const [name, owner] of owners) {
    if (owner === file) continue;
    for (const m of text.matchAll(new RegExp(`\\b${name}\\b`, 'g')))
      uses.push(
        `${file}:${String(text.slice(0, m.index).split('\n').length)} uses ${name} (the key object of ${owner}): read its keys through ${owner}'s methods`,
      );
  }
  return uses;
}

// Every source file but the table itself.
const SOURCES = sourceFiles(join(ROOT, 'src')).filter(
  (p) => relative(ROOT, p) !== join('src', 'redis', 'keyspace.ts'),
);

describe('the keyspace table', () => {
  it('names existing owner files', () => {
    const files = new Set(SOURCES.map((p) => relative(ROOT, p)));
    const missing = FAMILIES.flatMap((f) => [f.owner, ...(f.sharedWith ?? []).map((s) => s.file)])
      .filter((file) => !files.has(file))
      .map((file) => file);
    expect([...new Set(missing)]).toEqual([]);
  });

  it('has one entry per key', () => {
    const names = FAMILIES.map(familyName);
    expect(names.filter((n, i) => names.indexOf(n) !== i)).toEqual([]);
  });

  it('builds every key family in its owner only', () => {
    const violations = keySites(SOURCES)
      .filter((s) => !s.families.some((f) => buildsIn(f, s.file)))
      .map(
        (s) =>
          `${s.file}:${String(s.line)} ${s.text} ` +
          (s.families.length === 0
            ? 'builds a key of no family in src/redis/keyspace.ts'
            : `builds a key of ${s.families.map((f) => `${familyName(f)} (owner ${f.owner})`).join(', ')}`),
      );
    expect(violations).toEqual([]);
  });

  it('finds every family built in its owner', () => {
    const sites = keySites(SOURCES);
    const unbuilt = FAMILIES.filter(
      (f) =>
        f.type !== 'BullMQ' &&
        !familyName(f).includes(':tmp:') &&
        !sites.some((s) => s.file === f.owner && s.families.includes(f)),
    ).map(familyName);
    expect(unbuilt).toEqual([]);
  });

  it('catches a key built outside its owner', () => {
    // What a stray read of a store's key in the console looks like to the scan.
    const stray = [
      "const meta = src.keys.key('snap', kind, 'meta');",
      'const routed = `${src.keys.tag}:routed`;',
      "const other = src.keys.key('nobody', 'knows');",
    ].join('\n');
    const sites = sitesOf('src/console/data.ts', stray);
    expect(sites.map((s) => [s.line, s.families.some((f) => buildsIn(f, s.file))])).toEqual([
      [1, false],
      [2, false],
      [3, false],
    ]);
    // The same lines in the owners are theirs.
    expect(
      sitesOf('src/snapshot/store.ts', stray)[0]?.families.some((f) =>
        buildsIn(f, 'src/snapshot/store.ts'),
      ),
    ).toBe(true);
    expect(
      sitesOf('src/noise/store.ts', stray)[1]?.families.some((f) =>
        buildsIn(f, 'src/noise/store.ts'),
      ),
    ).toBe(true);
  });
});

describe("a store's key object", () => {
  const owners = new Map(
    SOURCES.flatMap((p) =>
      keyObjectFunctions(readFileSync(p, 'utf8')).map((name) => [name, relative(ROOT, p)] as const),
    ),
  );

  it('is found in its owner', () => {
    expect(owners.get('apiKeys')).toBe(join('src', 'api', 'store.ts'));
  });

  it('is used in its owner only (other files call the store)', () => {
    const uses = SOURCES.flatMap((p) =>
      keyObjectUses(relative(ROOT, p), readFileSync(p, 'utf8'), owners),
    );
    expect(uses).toEqual([]);
  });

  it('catches a store read through its key object elsewhere', () => {
    // How src/api/runtime.ts once read the API's version counter and change channel.
    const stray = [
      "import { readSnapshot, type apiKeys } from './store.js';",
      '  k: ReturnType<typeof apiKeys>;',
      "    const version = (await this.o.redis.get(this.o.k.version)) ?? '0';",
    ].join('\n');
    const apiStore = new Map([['apiKeys', 'src/api/store.ts']]);
    expect(keyObjectUses('src/api/runtime.ts', stray, apiStore)).toHaveLength(2);
    expect(keyObjectUses('src/api/store.ts', stray, apiStore)).toEqual([]);
  });
});

describe('docs/architecture.md', () => {
  it("has the keyspace module's key table", () => {
    const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
    const start = doc.indexOf('<!-- keyspace:start -->');
    const end = doc.indexOf('<!-- keyspace:end -->');
    expect(start, 'docs/architecture.md has no <!-- keyspace:start --> marker').toBeGreaterThan(-1);
    expect(end).toBeGreaterThan(start);
    const table = doc.slice(start + '<!-- keyspace:start -->'.length, end).trim();
    // On a failure, paste keyTableMarkdown()'s output between the markers.
    expect(table).toBe(keyTableMarkdown());
  });
});
