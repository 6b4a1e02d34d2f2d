/**
 * The Helm chart's values schema carries the channel definitions generated from the channel kinds
 * (`npm run helm:schema`); this fails when a kind's schema changed and the file was not
 * regenerated, or when the chart would refuse a channel config the daemon accepts.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { channelDefinitionName, withGeneratedChannels } from '../src/config/helm-schema.js';
import { CHANNEL_TYPES } from '../src/notify/kinds.js';
import { parseDuration } from '../src/config/duration.js';

const FILE = new URL('../helm/statuswatch/values.schema.json', import.meta.url);

describe('helm values schema', () => {
  const committed = JSON.parse(readFileSync(FILE, 'utf8')) as Parameters<
    typeof withGeneratedChannels
  >[0];

  it('is current: its channel definitions are what the kinds generate (npm run helm:schema)', () => {
    expect(committed).toEqual(withGeneratedChannels(committed));
  });

  it("its duration pattern accepts exactly what the daemon's duration parser accepts", () => {
    const definitions = committed['definitions'] as Record<
      string,
      { anyOf?: { pattern?: string }[] }
    >;
    const pattern = new RegExp(definitions['duration']?.anyOf?.[0]?.pattern ?? '^$');
    const daemon = (text: string): boolean => {
      try {
        parseDuration(text);
        return true;
      } catch {
        return false;
      }
    };
    const samples = [
      '500ms',
      '30s',
      '5m',
      '1h',
      '1d',
      '1h30m',
      '1d12h',
      '1m30s500ms',
      '5m3ms',
      ' 30s ',
      '1.5h',
      '30 s',
      '1h 30m',
      '30m1h',
      '1s1s',
      'ms',
      '',
      'h',
      '1w',
      '5',
      '1hh',
      '1m1m',
    ];
    for (const text of samples) expect(pattern.test(text), text).toBe(daemon(text));
  });

  it('has one definition per channel kind, chosen by type', () => {
    const definitions = committed['definitions'] as Record<string, { allOf?: unknown[] }>;
    for (const type of CHANNEL_TYPES)
      expect(definitions).toHaveProperty(channelDefinitionName(type));
    expect(definitions['channel']?.allOf).toHaveLength(CHANNEL_TYPES.length);
  });
});
