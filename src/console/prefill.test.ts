import { describe, expect, it } from 'vitest';
import { EMPTY_SILENCE_FORM, prefilledSilenceForm, silencesPage } from './pages.js';

const HOSTILE = '"><script>alert(1)</script>';

function page(query: string, subscriptions: string[] = ['payments']): string {
  const form = prefilledSilenceForm(new URLSearchParams(query)) ?? EMPTY_SILENCE_FORM;
  return silencesPage(
    { identity: null, nav: 'silences', title: 'Silences' },
    {
      silences: [],
      now: 0,
      subscriptions,
      channels: ['hook'],
      form,
      preview: null,
      issues: [],
      team: true,
    },
  ).toString();
}

describe('the silence form prefilled from a URL', () => {
  it('no prefill parameter: the empty form (a cursor or a notice is not one)', () => {
    expect(prefilledSilenceForm(new URLSearchParams('cursor=abc&notice=silenced'))).toBeNull();
  });

  it('reads services, events (known kinds only), subscriptions, channels, duration, comment', () => {
    const form = prefilledSilenceForm(
      new URLSearchParams(
        'services=stripe,github&events=incident.opened&events=nope&events=incident.opened&subscriptions=payments&duration=1h&comment=hi',
      ),
    );
    expect(form).toEqual({
      services: 'stripe,github',
      events: ['incident.opened'],
      subscriptions: ['payments'],
      channels: [],
      duration: '1h',
      comment: 'hi',
    });
    const html = page('services=stripe&events=incident.opened&subscriptions=payments&duration=1h');
    expect(html).toMatch(/id="s-services"\s+name="services"\s+value="stripe"/);
    expect(html).toMatch(/value="incident\.opened"\s+checked/);
    expect(html).toMatch(/value="payments"\s+checked/);
    expect(html).toMatch(/id="s-duration" name="duration" value="1h"/);
  });

  it('escapes every prefilled value', () => {
    const q = new URLSearchParams();
    for (const key of ['services', 'subscriptions', 'channels', 'duration', 'comment'])
      q.set(key, HOSTILE);
    const html = page(q.toString());
    expect(html).not.toContain('<script>alert(1)</script>');
    expect(html).toContain('&lt;script&gt;');
  });

  it("a subscription that is not the viewer's is shown ticked (the POST refuses it), never dropped", () => {
    const html = page('subscriptions=other-team', ['payments']);
    expect(html).toMatch(/value="other-team"\s+checked/);
    expect(html).not.toMatch(/value="payments"\s+checked/);
  });
});
