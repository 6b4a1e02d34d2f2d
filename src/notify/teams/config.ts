import { z } from 'zod';
import { httpUrlField, intField } from '../../config/fields.js';
import { templateMapSchema } from '../template.js';

export const teamsChannelConfigSchema = z.strictObject({
  type: z.literal('teams'),
  /** Message templates per event kind (docs/templates.md). */
  templates: templateMapSchema.optional(),
  /**
   * The Workflows trigger URL ("When a Teams webhook request is received"). A secret as a whole:
   * its query carries the flow's shared-access signature (`sp=…&sv=…&sig=…`), and anyone holding
   * it can post to the channel. Redacted from logs, errors and check-config.
   */
  webhookUrl: httpUrlField(),
  /** Per-request timeout in milliseconds (connect, response headers, response body); default 10 s. */
  timeoutMs: intField(1, 300_000).optional(),
});

export type TeamsChannelConfig = z.output<typeof teamsChannelConfigSchema>;
