/**
 * Product vs tooling: the bench (src/bench) is not part of the product. `npm run build`
 * (tsconfig.build.json, what the Dockerfile runs) compiles no bench module into dist/, and the
 * Docker build context leaves src/bench out; `npm run bench` builds it into dist-bench/
 * (tsconfig.bench.json). Runs after `npm run build` (`npm test` builds first).
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
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

  it('the Docker build context leaves the bench out', () => {
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim());
    expect(ignored).toContain('src/bench');
    expect(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')).not.toMatch(/tsconfig\.bench\.json/);
  });
});
