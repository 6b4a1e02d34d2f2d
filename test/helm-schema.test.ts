/**
 * The Helm chart's values schema carries the channel definitions generated from the channel kinds
 * (`npm run helm:schema`); this fails when a kind's schema changed and the file was not
 * regenerated, or when the chart would refuse a channel config the daemon accepts.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { channelDefinitionName, withGeneratedChannels } from '../src/config/helm-schema.js';
import { CHANNEL_TYPES } from '../src/notify/kinds.js';

const FILE = new URL('../helm/statuswatch/values.schema.json', import.meta.url);

describe('helm values schema', () => {
  const committed = JSON.parse(readFileSync(FILE, 'utf8')) as Parameters<
    typeof withGeneratedChannels
  >[0];

  it('is current: its channel definitions are what the kinds generate (npm run helm:schema)', () => {
    expect(committed).toEqual(withGeneratedChannels(committed));
  });

  it('has one definition per channel kind, chosen by type', () => {
    const definitions = committed['definitions'] as Record<string, { allOf?: unknown[] }>;
    for (const type of CHANNEL_TYPES)
      expect(definitions).toHaveProperty(channelDefinitionName(type));
    expect(definitions['channel']?.allOf).toHaveLength(CHANNEL_TYPES.length);
  });
});
