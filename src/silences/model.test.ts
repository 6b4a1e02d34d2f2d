import { describe, expect, it } from 'vitest';
import {
  parseSilenceRequest,
  parseStoredSilence,
  SilenceValidationError,
  type SilenceIssue,
} from './model.js';
import { newSilenceId } from './store.js';

const NOW = 1_800_000_000_000;
const HOUR = 3_600_000;

const valid = {
  matchers: { services: ['stripe'], events: ['incident.opened'] },
  duration: '2h',
  author: 'alice',
  comment: 'maintenance',
};

function issuesOf(input: unknown): SilenceIssue[] {
  try {
    parseSilenceRequest(input, NOW);
  } catch (err) {
    if (err instanceof SilenceValidationError) return [...err.issues];
    throw err;
  }
  throw new Error('expected the request to be rejected');
}

describe('parseSilenceRequest', () => {
  it('resolves a duration from now', () => {
    expect(parseSilenceRequest(valid, NOW)).toEqual({
      matchers: { services: ['stripe'], events: ['incident.opened'] },
      startsAt: NOW,
      endsAt: NOW + 2 * HOUR,
      author: 'alice',
      comment: 'maintenance',
    });
  });

  it('counts a duration from an explicit start', () => {
    const draft = parseSilenceRequest(
      { matchers: { channels: ['oncall'] }, startsAt: NOW + HOUR, duration: '30m', author: 'a' },
      NOW,
    );
    expect(draft.startsAt).toBe(NOW + HOUR);
    expect(draft.endsAt).toBe(NOW + HOUR + 30 * 60_000);
    expect(draft.comment).toBe('');
  });

  it('accepts endsAt as Unix ms or as ISO 8601 with a zone', () => {
    const iso = new Date(NOW + HOUR).toISOString();
    const base = { matchers: { subscriptions: ['payments'] }, author: ' bob ' };
    expect(parseSilenceRequest({ ...base, endsAt: NOW + HOUR }, NOW).endsAt).toBe(NOW + HOUR);
    const draft = parseSilenceRequest({ ...base, endsAt: iso }, NOW);
    expect(draft.endsAt).toBe(NOW + HOUR);
    expect(draft.author).toBe('bob');
  });

  it('accepts several values in a matcher', () => {
    const draft = parseSilenceRequest(
      { ...valid, matchers: { services: ['stripe', 'adyen'], channels: ['a', 'b'] } },
      NOW,
    );
    expect(draft.matchers).toEqual({ services: ['stripe', 'adyen'], channels: ['a', 'b'] });
  });

  it.each<[string, unknown, SilenceIssue[]]>([
    [
      'endsAt before startsAt',
      { ...valid, duration: undefined, startsAt: NOW + 2 * HOUR, endsAt: NOW + HOUR },
      [{ path: 'endsAt', message: 'must end after startsAt' }],
    ],
    [
      'endsAt in the past',
      { ...valid, duration: undefined, startsAt: NOW - 2 * HOUR, endsAt: NOW - HOUR },
      [{ path: 'endsAt', message: 'must end in the future' }],
    ],
    [
      'endsAt equal to now',
      { ...valid, duration: undefined, startsAt: NOW - HOUR, endsAt: NOW },
      [{ path: 'endsAt', message: 'must end in the future' }],
    ],
    [
      'a past start plus a duration that ended',
      { ...valid, startsAt: NOW - 3 * HOUR },
      [{ path: 'duration', message: 'must end in the future' }],
    ],
    [
      'both endsAt and duration',
      { ...valid, endsAt: NOW + HOUR },
      [{ path: 'duration', message: 'give either endsAt or duration, not both' }],
    ],
    [
      'neither endsAt nor duration',
      { ...valid, duration: undefined },
      [{ path: 'endsAt', message: 'required (or give duration, such as 2h)' }],
    ],
    [
      'no matcher',
      { ...valid, matchers: {} },
      [
        {
          path: 'matchers',
          message:
            'at least one matcher is required (services, events, subscriptions, channels, subjects)',
        },
      ],
    ],
    [
      'matchers missing',
      { ...valid, matchers: undefined },
      [{ path: 'matchers', message: 'required' }],
    ],
    [
      'an empty matcher list',
      { ...valid, matchers: { services: [] } },
      [
        {
          path: 'matchers.services',
          message: 'must list at least one value (omit the matcher to match anything)',
        },
      ],
    ],
    [
      'an unknown event kind',
      { ...valid, matchers: { events: ['incident.opened', 'incident.exploded'] } },
      [
        {
          path: 'matchers.events[1]',
          message: expect.stringContaining('unknown event kind') as string,
        },
      ],
    ],
    [
      'a misspelt matcher',
      { ...valid, matchers: { services: ['stripe'], evnets: ['incident.opened'] } },
      [
        {
          path: 'matchers.evnets',
          message:
            'unknown key (expected one of: services, events, subscriptions, channels, subjects)',
        },
      ],
    ],
    [
      '"*" as a service',
      { ...valid, matchers: { services: ['*'] } },
      [
        {
          path: 'matchers.services[0]',
          message: '"*" is not a wildcard here; omit services to match every service',
        },
      ],
    ],
    [
      'an empty author',
      { ...valid, author: '   ' },
      [{ path: 'author', message: 'must not be empty' }],
    ],
    ['no author', { ...valid, author: undefined }, [{ path: 'author', message: 'required' }]],
    [
      'a comment over 1000 characters',
      { ...valid, comment: 'x'.repeat(1001) },
      [{ path: 'comment', message: 'must be at most 1000 characters' }],
    ],
    [
      'a bad duration',
      { ...valid, duration: '2 hours' },
      [{ path: 'duration', message: expect.stringContaining('expected a duration') as string }],
    ],
    [
      'a zero duration',
      { ...valid, duration: '0s' },
      [{ path: 'duration', message: 'must be longer than 0s' }],
    ],
    [
      'an unzoned ISO time',
      { ...valid, duration: undefined, endsAt: '2027-01-01T00:00:00' },
      [{ path: 'endsAt', message: expect.stringContaining('ISO 8601') as string }],
    ],
    [
      'an unknown top-level key',
      { ...valid, until: 'tomorrow' },
      [{ path: 'until', message: expect.stringContaining('unknown key') as string }],
    ],
  ])('rejects %s, naming the field', (_name, input, want) => {
    expect(issuesOf(input)).toEqual(want);
  });

  it('a comment of exactly 1000 characters is fine', () => {
    expect(parseSilenceRequest({ ...valid, comment: 'y'.repeat(1000) }, NOW).comment).toHaveLength(
      1000,
    );
  });

  it('reports several bad fields at once', () => {
    const paths = issuesOf({ matchers: { events: ['nope'] }, duration: 'x', author: '' }).map(
      (i) => i.path,
    );
    expect(paths).toEqual(['matchers.events[0]', 'duration', 'author']);
  });

  it('rejects a non-object body', () => {
    expect(issuesOf([1, 2])).toEqual([{ path: '(root)', message: expect.any(String) as string }]);
  });
});

describe('parseStoredSilence', () => {
  const stored = {
    id: 'abc',
    matchers: { services: ['stripe'] },
    startsAt: NOW,
    endsAt: NOW + HOUR,
    author: 'a',
    comment: '',
    createdAt: NOW,
  };

  it('parses a stored silence, including an expired one with startsAt = endsAt', () => {
    expect(parseStoredSilence(JSON.stringify(stored))).toEqual(stored);
    const ended = { ...stored, endsAt: NOW };
    expect(parseStoredSilence(JSON.stringify(ended))).toEqual(ended);
  });

  it.each([
    ['not JSON', '{'],
    ['ending before it starts', JSON.stringify({ ...stored, endsAt: NOW - 1 })],
    ['without matchers', JSON.stringify({ ...stored, matchers: {} })],
    ['missing fields', JSON.stringify({ id: 'x' })],
  ])('returns undefined for %s', (_name, text) => {
    expect(parseStoredSilence(text)).toBeUndefined();
  });
});

describe('newSilenceId', () => {
  it('gives 16 URL-safe characters that never start with "-" (an option to the CLI)', () => {
    const ids = Array.from({ length: 5_000 }, () => newSilenceId());
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{15}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
