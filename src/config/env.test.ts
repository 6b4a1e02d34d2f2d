import { describe, expect, it } from 'vitest';
import { expandString, substituteEnv } from './env.js';

describe('expandString', () => {
  const env = { HOST: 'db.internal', EMPTY: '', PORT: '6380' };

  it.each([
    ['redis://${HOST}:${PORT}', 'redis://db.internal:6380'],
    ['${MISSING:-fallback}', 'fallback'],
    ['${EMPTY:-fallback}', 'fallback'],
    ['${EMPTY}', ''],
    ['${MISSING:-}', ''],
    ['${MISSING:-redis://127.0.0.1:6379}', 'redis://127.0.0.1:6379'],
    ['$${HOST}', '${HOST}'],
    ['a $${HOST} b ${HOST}', 'a ${HOST} b db.internal'],
    ['cost: $5 $', 'cost: $5 $'],
    ['no references', 'no references'],
  ])('%j → %j', (text, expected) => {
    const result = expandString(text, env);
    expect(result.problems).toEqual([]);
    expect(result.value).toBe(expected);
  });

  it('a name every object has (toString, constructor, __proto__) is a variable like any other', () => {
    expect(expandString('${toString}', env).problems).toEqual([
      'environment variable toString is not set (use ${toString:-} to allow an empty value)',
    ]);
    expect(expandString('${constructor:-fallback}', env).value).toBe('fallback');
    expect(expandString('${__proto__:-x}', env).value).toBe('x');
    expect(expandString('${toString}', { toString: 'set' }).value).toBe('set');
  });

  it('does not expand inserted values again', () => {
    expect(expandString('${A}', { A: '${B}', B: 'no' }).value).toBe('${B}');
  });

  it('reports an unset variable by name', () => {
    const result = expandString('x${NOPE}y', {});
    expect(result.problems).toEqual([
      'environment variable NOPE is not set (use ${NOPE:-} to allow an empty value)',
    ]);
    expect(result.value).toBe('xy');
  });

  it.each(['${', '${1ABC}', '${A B}', '${A:=x}', '${}'])('reports malformed %j', (text) => {
    const result = expandString(text, { A: 'x' });
    expect(result.problems).toHaveLength(1);
    expect(result.problems[0]).toMatch(/reference/);
  });
});

describe('substituteEnv', () => {
  it('substitutes string scalars at every depth and leaves other scalars alone', () => {
    const result = substituteEnv(
      { a: '${X}', list: ['${X}', 1, true, null], nested: { deep: ['${Y:-d}'] }, '${X}': 'key' },
      { X: 'ex' },
    );
    expect(result.issues).toEqual([]);
    expect(result.value).toEqual({
      a: 'ex',
      list: ['ex', 1, true, null],
      nested: { deep: ['d'] },
      '${X}': 'key',
    });
    expect(result.inserted).toEqual(['ex', 'ex']);
  });

  it('names the config path and variable of every missing reference', () => {
    const result = substituteEnv(
      { channels: { oncall: { webhookUrl: '${SLACK_URL}' } }, subscriptions: [{ name: '${N}' }] },
      {},
    );
    expect(result.issues.map(({ path, message }) => ({ path, message }))).toEqual([
      {
        path: 'channels.oncall.webhookUrl',
        message:
          'environment variable SLACK_URL is not set (use ${SLACK_URL:-} to allow an empty value)',
      },
      {
        path: 'subscriptions[0].name',
        message: 'environment variable N is not set (use ${N:-} to allow an empty value)',
      },
    ]);
    expect(result.failedPaths).toEqual(['channels.oncall.webhookUrl', 'subscriptions[0].name']);
  });

  it('cannot inject YAML structure: a value stays one string', () => {
    const result = substituteEnv({ name: '${V}' }, { V: 'a\nchannels: {evil: 1}' });
    expect(result.value).toEqual({ name: 'a\nchannels: {evil: 1}' });
  });
});
