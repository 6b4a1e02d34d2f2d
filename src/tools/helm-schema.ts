/**
 * Regenerates the channel definitions of `helm/statuswatch/values.schema.json` from the channel
 * kinds' zod schemas: `npm run helm:schema` writes the file; `--check` exits 1 when the committed
 * file is not current (the test suite runs the same check).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { formatSchema, withGeneratedChannels } from '../config/helm-schema.js';

const file =
  process.argv.find((arg) => arg.endsWith('.json')) ?? 'helm/statuswatch/values.schema.json';
const check = process.argv.includes('--check');
const current = JSON.parse(readFileSync(file, 'utf8')) as Parameters<
  typeof withGeneratedChannels
>[0];
const next = formatSchema(withGeneratedChannels(current));
// Compared as data: prettier lays the committed file out differently from JSON.stringify.
const same = next === formatSchema(current);
if (check) {
  if (!same) {
    console.error(`${file} is not current: run npm run helm:schema`);
    process.exit(1);
  }
  console.log(`${file} is current`);
} else if (same) {
  console.log(`${file} unchanged`);
} else {
  writeFileSync(file, next);
  console.log(`${file} written`);
}
