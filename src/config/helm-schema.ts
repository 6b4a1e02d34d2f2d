/**
 * The channel part of the Helm chart's `values.schema.json`, generated from the channel kinds'
 * zod schemas (`src/notify/kinds.ts`), so the chart accepts exactly the channel fields the daemon
 * does. Values may hold `${VAR}` references that the daemon substitutes at load time, so every
 * leaf that is not a plain string (a number, a boolean, a string with a pattern) also accepts an
 * `envRef`. The rest of the chart schema is written by hand.
 */
import { z } from 'zod';
import { channelKinds, CHANNEL_TYPES } from '../notify/kinds.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const ENV_REF: JsonObject = { $ref: '#/definitions/envRef' };
/** A secret: a whole `${VAR}` reference (or empty), never a literal (the config is a ConfigMap). */
const SECRET_REF: JsonObject = { $ref: '#/definitions/secretRef' };

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A leaf a `${VAR}` may stand for: numbers, booleans and constrained strings. */
function needsEnvRef(node: JsonObject): boolean {
  const type = node['type'];
  if (type === 'number' || type === 'integer' || type === 'boolean') return true;
  return type === 'string' && ('pattern' in node || 'format' in node || 'maxLength' in node);
}

function relax(node: Json, secret: boolean): Json {
  if (Array.isArray(node)) return node.map((item) => relax(item, false));
  if (!isObject(node)) return node;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$schema') continue;
    if (key === 'properties' && isObject(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, child]) => [name, relax(child, false)]),
      );
    } else {
      out[key] = relax(value, false);
    }
  }
  if ('const' in out || 'enum' in out) return out;
  const relaxed =
    out['type'] === 'boolean' && Object.keys(out).length === 1
      ? { $ref: '#/definitions/bool' }
      : needsEnvRef(out)
        ? { anyOf: [out, ENV_REF] }
        : out;
  return secret ? { ...relaxed, description: 'a secret: use ${VAR}' } : relaxed;
}

/** Secret fields that are often not secret (a plain endpoint, a team header). */
const MAY_BE_LITERAL = new Set(['url', 'headers']);

/**
 * Makes the kind's secret fields (top-level and dotted paths) take only `${VAR}` references,
 * but for `MAY_BE_LITERAL` ones, which are only described as secrets.
 */
function markSecrets(schema: JsonObject, paths: readonly string[]): JsonObject {
  for (const path of paths) {
    let node: Json | undefined = schema;
    const parts = path.split('.');
    for (const [i, part] of parts.entries()) {
      const properties: Json | undefined = isObject(node) ? node['properties'] : undefined;
      if (!isObject(properties)) break;
      const child: Json | undefined = properties[part];
      if (i === parts.length - 1 && isObject(child)) {
        // A credential takes only a reference to the environment: a literal one would be
        // rendered into the ConfigMap. A webhook's `url` and `headers` are kept secret in case
        // they carry one, but often do not: they may be literal.
        properties[part] = MAY_BE_LITERAL.has(part)
          ? { ...child, description: 'a secret: use ${VAR}' }
          : { allOf: [SECRET_REF], description: 'a secret: use ${VAR}' };
      }
      node = child;
    }
  }
  return schema;
}

/** `slack` → `slackChannel`: the definition name of a kind. */
export function channelDefinitionName(type: string): string {
  return `${type}Channel`;
}

/** `definitions` entries: one per kind, and `channel` choosing among them by `type`. */
export function channelDefinitions(): JsonObject {
  const definitions: JsonObject = {};
  for (const type of CHANNEL_TYPES) {
    const kind = channelKinds[type];
    const generated = z.toJSONSchema(kind.schema, {
      io: 'input',
      target: 'draft-07',
      unrepresentable: 'any',
    }) as JsonObject;
    const relaxed = relax(generated, false) as JsonObject;
    definitions[channelDefinitionName(type)] = {
      description: kind.title,
      ...markSecrets(relaxed, kind.secretPaths),
    };
  }
  definitions['channel'] = {
    type: 'object',
    required: ['type'],
    properties: { type: { enum: [...CHANNEL_TYPES] } },
    allOf: CHANNEL_TYPES.map((type) => ({
      if: { properties: { type: { const: type } } },
      then: { $ref: `#/definitions/${channelDefinitionName(type)}` },
    })),
  };
  return definitions;
}

/**
 * The chart schema with its channel definitions replaced by the generated ones (definitions named
 * `*Channel` that no kind has any more are dropped).
 */
export function withGeneratedChannels(schema: JsonObject): JsonObject {
  const current = isObject(schema['definitions']) ? schema['definitions'] : {};
  const kept = Object.fromEntries(
    Object.entries(current).filter(([name]) => name !== 'channel' && !name.endsWith('Channel')),
  );
  const generated = channelDefinitions();
  const ordered: JsonObject = {};
  // Keep the hand-written order, with the channel definitions where they were.
  let placed = false;
  for (const name of Object.keys(current)) {
    if (name in kept) ordered[name] = kept[name] ?? null;
    else if (!placed) {
      Object.assign(ordered, generated);
      placed = true;
    }
  }
  if (!placed) Object.assign(ordered, generated);
  return { ...schema, definitions: ordered };
}

/** The file's text: two-space JSON with a final newline (as prettier leaves it). */
export function formatSchema(schema: JsonObject): string {
  return `${JSON.stringify(schema, null, 2)}\n`;
}
