/**
 * Product vs tooling: the bench (src/bench) is not part of the product. `npm run build`
 * (tsconfig.build.json, what the Dockerfile runs) compiles no bench module into dist/, and the
 * Docker build context leaves src/bench out; `npm run bench` builds it into dist-bench/
 * (tsconfig.bench.json). Runs after `npm run build` (`npm test` builds first).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const DIST = join(ROOT, 'dist');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join('/'));
}

describe('product build output', () => {
  it('the product build (tsconfig.build.json) compiles no module of src/bench', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [TSC, '-p', 'tsconfig.build.json', '--listFilesOnly'],
      { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 },
    );
    const sources = stdout
      .split('\n')
      .map((line) => relative(ROOT, line.trim()).split(sep).join('/'))
      .filter((file) => file.startsWith('src/'));
    expect(sources).toContain('src/cli.ts');
    expect(sources.filter((file) => file.startsWith('src/bench/'))).toEqual([]);
  }, 120_000);

  it('dist/ (npm run build) holds the daemon and no bench file', () => {
    expect(existsSync(join(DIST, 'cli.js')), 'dist/cli.js missing: run `npm run build`').toBe(true);
    const files = filesUnder(DIST);
    expect(files.filter((file) => file.startsWith('bench/'))).toEqual([]);
    const importsBench = files
      .filter((file) => file.endsWith('.js'))
      .filter((file) =>
        /\bfrom\s+['"][^'"]*\/bench\/|import\(\s*['"][^'"]*\/bench\//.test(
          readFileSync(join(DIST, file), 'utf8'),
        ),
      );
    expect(importsBench).toEqual([]);
  });

  it('dist/cli.js and dist/thread.js are bundles whose statically loaded code is ASCII only', () => {
    // scripts/bundle.mjs: V8 keeps a script's source in each isolate's heap, two bytes a
    // character as soon as one character is beyond Latin-1. The console (tagged templates keep
    // their characters) is a chunk of its own that only the thread serving HTTP imports.
    // Static imports and re-exports of a chunk, bare ones too (`import "./bundle-….js"`).
    const staticImports = (file: string): string[] =>
      [
        ...readFileSync(join(DIST, file), 'utf8').matchAll(
          /^(?:import|export)\b[^;]*?"\.\/(bundle-[^"]+)";/gm,
        ),
      ].map((m) => m[1] ?? '');
    /** `entry` and every chunk it loads statically, directly or not. */
    const loadedBy = (entry: string): Set<string> => {
      const loaded = new Set<string>();
      const visit = (file: string): void => {
        if (loaded.has(file)) return;
        loaded.add(file);
        for (const next of staticImports(file)) visit(next);
      };
      visit(entry);
      return loaded;
    };
    const byThread = loadedBy('thread.js');
    const loaded = new Set([...byThread, ...loadedBy('cli.js')]);
    expect([...byThread].filter((f) => f.startsWith('bundle-')).length).toBeGreaterThan(0);
    for (const file of loaded) {
      const ascii = readFileSync(join(DIST, file)).every((byte) => byte < 0x80);
      expect(ascii, `${file} has non-ASCII bytes`).toBe(true);
    }
    for (const file of byThread) {
      expect(readFileSync(join(DIST, file), 'utf8'), `${file} holds the console`).not.toMatch(
        /function createAppConsole\b/,
      );
    }
    // `run` (what the image runs) loads neither the demo (its SMTP sink: smtp-server, mailparser)
    // nor the simulator: they are imported by their commands.
    for (const file of loadedBy('cli.js')) {
      const text = readFileSync(join(DIST, file), 'utf8');
      expect(text, `${file} holds the demo's SMTP sink`).not.toMatch(/\bvar SMTPServer\b/);
      expect(text, `${file} holds the simulator`).not.toMatch(/function createSimulator\b/);
    }
    expect(
      existsSync(join(DIST, 'scripts', 'snapshot-load.lua')),
      'the Lua scripts beside the bundle',
    ).toBe(true);
  });

  it('the Docker build context leaves the bench out', () => {
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim());
    expect(ignored).toContain('src/bench');
    expect(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')).not.toMatch(/tsconfig\.bench\.json/);
  });
});

describe('what loading the daemon maps into memory', () => {
  it("loading dist/cli.js asks Intl for nothing, so none of ICU's data is mapped in for it", async () => {
    // A first Intl.DateTimeFormat reads about 5 MB of Node.js's ICU data into the process's
    // resident pages (LiquidJS asked it for the locale as its engine was built, templates or
    // not). Counted by a module loaded before the CLI.
    const dir = mkdtempSync(join(tmpdir(), 'sw-intl-'));
    try {
      const counter = join(dir, 'count-intl.mjs');
      writeFileSync(
        counter,
        [
          'let made = 0;',
          'const DTF = Intl.DateTimeFormat;',
          'function Counted(...args) { made += 1; return new DTF(...args); }',
          'Counted.prototype = DTF.prototype;',
          'Counted.supportedLocalesOf = DTF.supportedLocalesOf;',
          'Intl.DateTimeFormat = Counted;',
          "process.on('exit', () => process.stderr.write(`Intl.DateTimeFormat made: ${made}\\n`));",
        ].join('\n'),
      );
      const { stderr } = await promisify(execFile)(
        process.execPath,
        ['--import', counter, join(DIST, 'cli.js'), 'help'],
        { cwd: ROOT },
      );
      expect(stderr).toContain('Intl.DateTimeFormat made: 0');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
