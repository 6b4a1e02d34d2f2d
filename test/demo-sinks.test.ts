/**
 * The demo's Slack and webhook sinks (src/demo/sinks.ts), on the receivers' shared scaffold: the
 * Slack sink answers `ok` and reports the message's lines; the webhook sink verifies each
 * delivery with the official standardwebhooks library (204 when it holds, 400 when not) and
 * reports it.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { Webhook } from 'standardwebhooks';
import { slackSink, webhookSink, type Received } from '../src/demo/sinks.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe('the demo sinks', () => {
  it('the Slack sink answers ok and reports the text and the blocks’ lines', async () => {
    const got: Received[] = [];
    const sink = await slackSink((r) => got.push(r));
    closers.push(() => sink.close());
    expect(sink.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/services\/T000\/B000\/demo$/);
    const res = await request(sink.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        text: 'Stripe: incident opened',
        blocks: [
          {
            type: 'section',
            text: { text: '*Stripe* · Incident opened\n*Change:* investigating' },
          },
          { type: 'context', elements: [{ text: 'Subscription: payments' }] },
        ],
      }),
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain');
    expect(await res.body.text()).toBe('ok');
    expect(got).toEqual([
      {
        sink: 'slack',
        summary: 'Stripe: incident opened',
        lines: ['*Stripe* · Incident opened', '*Change:* investigating', 'Subscription: payments'],
      },
    ]);
  });

  it('the webhook sink verifies the signature: 204 and "verified" when it holds, 400 and "INVALID" when not', async () => {
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const got: Received[] = [];
    const sink = await webhookSink(secret, (r) => got.push(r));
    closers.push(() => sink.close());
    const body = JSON.stringify({ type: 'incident.opened', data: { eventId: 'e1' } });
    const signed = (key: string) => {
      const at = new Date();
      return {
        'content-type': 'application/json',
        'webhook-id': 'msg_1',
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(key.replace(/^whsec_/, '')).sign('msg_1', at, body),
      };
    };
    const good = await request(sink.url, { method: 'POST', headers: signed(secret), body });
    await good.body.dump();
    expect(good.statusCode).toBe(204);
    const other = `whsec_${randomBytes(24).toString('base64')}`;
    const bad = await request(sink.url, { method: 'POST', headers: signed(other), body });
    await bad.body.dump();
    expect(bad.statusCode).toBe(400);
    expect(got.map((r) => [r.sink, r.summary, r.lines[0]])).toEqual([
      ['webhook', 'incident.opened', 'webhook-id msg_1  signature verified'],
      ['webhook', 'incident.opened', 'webhook-id msg_1  signature INVALID'],
    ]);
    expect(got[0]?.lines[1]).toBe(body);
  });
});
