import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import {
  startTeamsReceiver,
  TEAMS_RECEIVER_SIG,
  type TeamsReceiver,
} from '../src/demo/receivers/teams.js';
import { teamsChannelConfigSchema } from '../src/notify/teams/config.js';
import { createTeamsNotifier, teamsErrorCode, teamsKind } from '../src/notify/teams/index.js';
import { TEAMS_MAX_BODY_BYTES } from '../src/notify/teams/render.js';
import { DeliveryError, type Notifier } from '../src/notify/types.js';
import {
  exposedText,
  hostileTransition,
  manyServices,
  notification,
  refusedUrl,
  startReceiver,
  transition,
} from './notify-helpers.js';

interface Card {
  version: string;
  body: { type: string; text?: string; facts?: { title: string; value: string }[] }[];
  actions?: { type: string; title: string; url: string }[];
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(
  options: { timeoutMs?: number; now?: () => number; url?: (u: string) => string } = {},
): Promise<{ receiver: TeamsReceiver; notifier: Notifier }> {
  const receiver = await startTeamsReceiver();
  const config = teamsChannelConfigSchema.parse({
    type: 'teams',
    webhookUrl: options.url === undefined ? receiver.url : options.url(receiver.url),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  });
  const notifier = createTeamsNotifier(
    config,
    options.now === undefined ? {} : { now: options.now },
  );
  cleanups.push(
    () => receiver.close(),
    () => notifier.close(),
  );
  return { receiver, notifier };
}

async function failure(promise: Promise<unknown>): Promise<DeliveryError> {
  const caught: unknown = await promise.then(
    () => null,
    (error: unknown) => error,
  );
  expect(caught).toBeInstanceOf(DeliveryError);
  return caught as DeliveryError;
}

/** The secret parts of a receiver URL: the whole URL, the workflow path, the query, the sig. */
function secretParts(url: string): string[] {
  const parsed = new URL(url);
  return [url, parsed.pathname, parsed.search.slice(1), TEAMS_RECEIVER_SIG];
}

async function expectNoSecrets(error: unknown, url: string): Promise<void> {
  const text = await exposedText(error);
  for (const secret of secretParts(url)) expect(text).not.toContain(secret);
}

describe('Teams notifier against a local Workflows receiver', () => {
  it('POSTs one valid Adaptive Card 1.4 with the facts and links; the receiver answers 202', async () => {
    const { receiver, notifier } = await setup();
    await notifier.send(notification([transition('incident.opened')]));
    expect(receiver.rejected).toEqual([]);
    expect(receiver.cards).toHaveLength(1);
    const received = receiver.cards[0]!;
    expect(received.headers['content-type']).toBe('application/json');
    expect(received.message).toMatchObject({
      type: 'message',
      attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null }],
    });
    const card = received.card as unknown as Card;
    expect(card.version).toBe('1.4');
    expect(card.body[0]?.text).toBe('Stripe: incident opened — Card payments failing');
    const facts = card.body.find((b) => b.type === 'FactSet')?.facts;
    expect(facts).toEqual([
      { title: 'Service', value: 'Stripe' },
      { title: 'Event', value: 'Incident opened' },
      { title: 'Status', value: 'investigating' },
      { title: 'Incident', value: 'Card payments failing' },
      { title: 'Started', value: '2026-01-01 00:00 UTC' },
      { title: 'Subscription', value: 'payments' },
    ]);
    expect(card.actions?.map((a) => a.url)).toEqual([
      'https://status.stripe.com/',
      'https://stripe.com/',
    ]);
  });

  it('delivers hostile upstream text inert', async () => {
    const { receiver, notifier } = await setup();
    await notifier.send(notification([hostileTransition()]));
    expect(receiver.rejected).toEqual([]);
    const body = receiver.cards[0]!.body;
    for (const raw of ['<script>', '](', '<!channel>', '<https://evil.example|click>']) {
      expect(body).not.toContain(raw);
    }
  });

  it('never sends an oversized card: 500 hostile transitions arrive within 28 KB, none rejected', async () => {
    const { receiver, notifier } = await setup();
    const hostile = hostileTransition();
    await notifier.send(notification(Array.from({ length: 500 }, () => hostile)));
    await notifier.send(
      notification(manyServices(500), { type: 'digest', summary: ['x'.repeat(5000)] }),
    );
    await notifier.send(notification([hostile], { type: 'test' }));
    expect(receiver.rejected).toEqual([]);
    expect(receiver.cards).toHaveLength(3);
    for (const card of receiver.cards) expect(card.bytes).toBeLessThanOrEqual(TEAMS_MAX_BODY_BYTES);
  });

  it('the receiver itself answers 413 to a body over 28 KB (so the check above means something)', async () => {
    const receiver = await startTeamsReceiver();
    cleanups.push(() => receiver.close());
    const response = await request(receiver.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'message', pad: 'x'.repeat(TEAMS_MAX_BODY_BYTES) }),
    });
    const text = await response.body.text();
    expect(response.statusCode).toBe(413);
    expect(teamsErrorCode(text)).toBe('RequestEntityTooLarge');
    expect(receiver.rejected).toMatchObject([{ status: 413 }]);
  });

  it('a 429 with Retry-After: 7 is retryable after 7 s, and the next send goes through', async () => {
    const { receiver, notifier } = await setup();
    receiver.failNext(429, 1, { 'retry-after': '7' });
    const error = await failure(notifier.send(notification([transition()])));
    expect(error).toMatchObject({
      retryable: true,
      reason: 'rate_limited',
      httpStatus: 429,
      retryAfterMs: 7000,
      code: 'delivery_retryable',
    });
    expect(receiver.failed).toEqual([429]);
    await notifier.send(notification([transition()]));
    expect(receiver.cards).toHaveLength(1);
  });

  it('a 429 with an HTTP-date Retry-After is measured from the injected clock', async () => {
    const now = Date.UTC(2026, 0, 1, 12, 0, 0);
    const { receiver, notifier } = await setup({ now: () => now });
    receiver.failNext(429, 1, { 'retry-after': new Date(now + 30_000).toUTCString() });
    const error = await failure(notifier.send(notification([transition()])));
    expect(error.retryAfterMs).toBe(30_000);
  });

  it('a 500 is retryable, sent once; three scripted 503s fail three sends', async () => {
    const { receiver, notifier } = await setup();
    receiver.failNext(500);
    const error = await failure(notifier.send(notification([transition()])));
    expect(error).toMatchObject({ retryable: true, reason: 'server', httpStatus: 500 });
    expect(receiver.failed).toEqual([500]);
    receiver.failNext(503, 3);
    for (let i = 0; i < 3; i++) {
      expect(await failure(notifier.send(notification([transition()])))).toMatchObject({
        retryable: true,
        httpStatus: 503,
      });
    }
    await notifier.send(notification([transition()]));
    expect(receiver.failed).toEqual([500, 503, 503, 503]);
    expect(receiver.cards).toHaveLength(1);
  });

  it('a 400 is permanent; an undocumented error code from the body is the operator’s only', async () => {
    const { receiver, notifier } = await setup();
    receiver.failNext(400);
    const error = await failure(notifier.send(notification([transition()])));
    expect(error).toMatchObject({
      retryable: false,
      reason: 'client',
      httpStatus: 400,
      code: 'delivery_permanent',
    });
    expect(error.message).toBe(
      'Teams: receiver answered HTTP 400 (rejected): the card was refused',
    );
    expect(error.detail).toBe('error code ScriptedFailure');
    expect(receiver.cards).toHaveLength(0);
  });

  it('413 and 404 are permanent client failures, 401/403 permanent auth failures', async () => {
    const { receiver, notifier } = await setup();
    for (const [status, reason] of [
      [413, 'client'],
      [404, 'client'],
      [401, 'auth'],
      [403, 'auth'],
    ] as const) {
      receiver.failNext(status);
      const error = await failure(notifier.send(notification([transition()])));
      expect(error).toMatchObject({ retryable: false, reason, httpStatus: status });
    }
    expect(receiver.failed).toEqual([413, 404, 401, 403]);
  });

  it('a wrong signature is refused with 401: permanent auth, the signature never in the error', async () => {
    const { receiver, notifier } = await setup({
      url: (u) => u.replace(`sig=${TEAMS_RECEIVER_SIG}`, 'sig=WRONGSIG'),
    });
    const error = await failure(notifier.send(notification([transition()])));
    expect(error).toMatchObject({ retryable: false, reason: 'auth', httpStatus: 401 });
    expect(receiver.rejected).toMatchObject([{ status: 401 }]);
    await expectNoSecrets(error, receiver.url.replace(`sig=${TEAMS_RECEIVER_SIG}`, 'sig=WRONGSIG'));
    expect(await exposedText(error)).not.toContain('WRONGSIG');
  });

  it('a refused connection is a retryable network failure without the URL or sig', async () => {
    const url = await refusedUrl(
      `/workflows/abc/triggers/manual/paths/invoke?api-version=1&sp=%2Ftriggers&sv=1.0&sig=${TEAMS_RECEIVER_SIG}`,
    );
    const notifier = createTeamsNotifier(
      teamsChannelConfigSchema.parse({ type: 'teams', webhookUrl: url }),
    );
    cleanups.push(() => notifier.close());
    const error = await failure(notifier.send(notification([transition()])));
    expect(error).toMatchObject({ retryable: true, reason: 'network', httpStatus: null });
    expect(error.message).toContain('could not reach the receiver');
    expect(error.message).not.toContain('refused');
    expect(error.detail).toContain('ECONNREFUSED');
    await expectNoSecrets(error, url);
  });

  it('an endpoint that never answers times out, retryable, without the URL or sig', async () => {
    const path = `/workflows/abc/triggers/manual/paths/invoke?api-version=1&sig=${TEAMS_RECEIVER_SIG}`;
    const hanging = await startReceiver(() => ({ status: 202, hang: true }), path);
    const notifier = createTeamsNotifier(
      teamsChannelConfigSchema.parse({ type: 'teams', webhookUrl: hanging.url, timeoutMs: 300 }),
    );
    cleanups.push(
      () => hanging.close(),
      () => notifier.close(),
    );
    const error = await failure(notifier.send(notification([transition()])));
    expect(error).toMatchObject({ retryable: true, reason: 'timeout' });
    expect(hanging.received).toHaveLength(1);
    await expectNoSecrets(error, hanging.url);
  });

  it('no error of any status carries the URL, its path, query or sig', async () => {
    const { receiver, notifier } = await setup();
    for (const status of [400, 401, 404, 413, 429, 500]) {
      receiver.failNext(status);
      const error = await failure(notifier.send(notification([transition()])));
      await expectNoSecrets(error, receiver.url);
    }
  });

  it('uses an injected dispatcher and leaves it open on close', async () => {
    const receiver = await startTeamsReceiver();
    const dispatcher = new Agent();
    const notifier = createTeamsNotifier(
      teamsChannelConfigSchema.parse({ type: 'teams', webhookUrl: receiver.url }),
      { dispatcher },
    );
    cleanups.push(
      () => receiver.close(),
      () => dispatcher.close(),
    );
    await notifier.send(notification([transition()]));
    await notifier.close();
    expect(dispatcher.closed).toBe(false);
    expect(receiver.cards).toHaveLength(1);
  });
});

describe('teamsKind', () => {
  const url = `https://prod-01.westeurope.logic.azure.com:443/workflows/abc123/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=${TEAMS_RECEIVER_SIG}`;
  const config = teamsChannelConfigSchema.parse({ type: 'teams', webhookUrl: url });

  it('validates the config strictly', () => {
    expect(teamsChannelConfigSchema.safeParse({ type: 'teams', webhookUrl: url }).success).toBe(
      true,
    );
    expect(
      teamsChannelConfigSchema.safeParse({ type: 'teams', webhookUrl: url, timeoutMs: '5000' })
        .data,
    ).toMatchObject({ timeoutMs: 5000 });
    for (const bad of [
      { type: 'teams' },
      { type: 'teams', webhookUrl: 'javascript:alert(1)' },
      { type: 'teams', webhookUrl: url, mention: '@here' },
      { type: 'teams', webhookUrl: url, timeoutMs: 0 },
    ]) {
      expect(teamsChannelConfigSchema.safeParse(bad).success).toBe(false);
    }
  });

  it('hides the URL everywhere: secrets, redact, describe, preview', () => {
    expect(teamsKind.secretPaths).toEqual(['webhookUrl']);
    const secrets = teamsKind.secrets(config);
    expect(secrets).toContain(url);
    expect(secrets.some((s) => s.includes(TEAMS_RECEIVER_SIG) && !s.startsWith('https:'))).toBe(
      true,
    );
    expect(teamsKind.redact(config)).toEqual({
      type: 'teams',
      webhookUrl: 'https://prod-01.westeurope.logic.azure.com/[REDACTED]',
    });
    expect(teamsKind.describe(config)).toBe(
      'teams (Workflows webhook, Adaptive Card 1.4, URL hidden)',
    );
    const preview = teamsKind.preview(notification([transition()]), 'oncall', config, 0);
    expect(
      preview.startsWith(
        'POST <teams workflow URL of oncall>\ncontent-type: application/json\n\n{',
      ),
    ).toBe(true);
    expect(preview).not.toContain(TEAMS_RECEIVER_SIG);
    expect(preview).not.toContain('logic.azure.com');
    expect(JSON.parse(preview.slice(preview.indexOf('{')))).toMatchObject({ type: 'message' });
  });

  it('paces each workflow at most 4 requests a second', () => {
    expect(teamsKind.pacing?.(config)).toEqual({ destination: `teams:${url}`, intervalMs: 250 });
  });
});
