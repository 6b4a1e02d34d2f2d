// Bundles the daemon's two entry points after tsc (`npm run build`, `npm run bench:build`):
// `<dir>/cli.js` (the command line, what the image runs) and `<dir>/thread.js` (a worker thread of
// `statuswatch run`), with the code they share in `<dir>/bundle-*.js` chunks. Each thread is a V8
// isolate that keeps every module's source text in its heap: tsc's tree of ES modules plus
// node_modules came to about 32 MB of heap per isolate, this bundle to about 17 MB (unused
// exports of the dependencies dropped, one module instead of hundreds). docs/architecture.md,
// "The build", says why and what stays outside.
//
// Everything sits at the top of <dir>, so the two paths the code finds next to itself resolve the
// same in the bundle as in tsc's tree: `./thread.js` (src/runtime/daemon.ts, from
// dist/runtime/daemon.js or from the bundle) and `./scripts/*.lua` (src/redis/scripts.ts: the Lua
// scripts are copied to <dir>/scripts as well as <dir>/redis/scripts). Not minified: stack traces
// and class names stay readable.
//
// Usage: node scripts/bundle.mjs <dir>   (default dist)
import { cpSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { rolldown } from 'rolldown';

const dir = resolve(process.argv[2] ?? 'dist');
const out = join(dir, '.bundle');

// Resolved at run time from node_modules, not bundled: pino starts its transports (pino-pretty)
// in worker threads by file name, and msgpackr (BullMQ) loads its optional native addon by path.
const EXTERNAL = [
  /^pino(-pretty)?(\/|$)/,
  /^thread-stream(\/|$)/,
  /^msgpackr-extract(\/|$)/,
  /\.node$/,
];

// The first line of each entry the bundle writes (after cli.js's hashbang).
const MARK = '// bundled by scripts/bundle.mjs';

if (readFileSync(join(dir, 'cli.js'), 'utf8').split('\n', 2).includes(MARK)) {
  console.error(
    `${join(dir, 'cli.js')} is already a bundle: compile with tsc first (npm run build)`,
  );
  process.exit(1);
}
for (const name of readdirSync(dir)) {
  if (name.startsWith('bundle-')) rmSync(join(dir, name));
}
rmSync(out, { recursive: true, force: true });

// One copy of luxon: our modules import its ES build, cron-parser (BullMQ's too) requires its
// CommonJS build, and the bundle carried both (about 230 KB of source each, in every isolate).
const luxon = join(
  dirname(createRequire(import.meta.url).resolve('luxon/package.json')),
  'build',
  'es6',
  'luxon.mjs',
);

const bundle = await rolldown({
  input: { cli: join(dir, 'cli.js'), thread: join(dir, 'runtime', 'thread.js') },
  platform: 'node',
  external: EXTERNAL,
  resolve: { alias: { luxon } },
  logLevel: 'warn',
  onLog(level, log, handler) {
    // Circular imports inside dependencies (zod, undici) are theirs and harmless.
    if (log.code === 'CIRCULAR_DEPENDENCY') return;
    handler(level, log);
  },
});
await bundle.write({
  dir: out,
  format: 'esm',
  entryFileNames: '[name].js',
  banner: (chunk) => (chunk.isEntry ? MARK : ''),
  chunkFileNames: 'bundle-[name]-[hash].js',
  comments: false,
  // Pure ASCII: V8 keeps a script's source in the heap, and one character beyond Latin-1
  // anywhere makes all of it two bytes a character (the 4.7 MB chunk took 9.5 MB).
  charset: 'ascii',
  sourcemap: false,
});
await bundle.close();

for (const name of readdirSync(out)) renameSync(join(out, name), join(dir, name));
rmSync(out, { recursive: true, force: true });
// tsc's map of the cli.js the bundle replaced would point a stack trace at the wrong lines.
rmSync(join(dir, 'cli.js.map'), { force: true });
// A fresh copy: a script removed from src/redis/scripts must not linger beside the bundle.
rmSync(join(dir, 'scripts'), { recursive: true, force: true });
cpSync(join(dir, 'redis', 'scripts'), join(dir, 'scripts'), { recursive: true });
