/**
 * The demo timeline (~60 s) as a constant, because tsc does not copy demo.yaml into dist.
 * Same content as demo.yaml (a test asserts it): every event kind for stripe, github, slack,
 * aws-s3 and okta — incidents opened/updated/resolved, status changes held for ~30 s, SLA
 * at_risk → breached → recovered, score drops of 10+ points, evidence stale → fresh, and the
 * early warnings (an SLA burning towards its target, a score falling steadily).
 */
import type { Scenario } from '../scenario.js';

export const demoScenario: Scenario = {
  steps: [
    {
      at: '2s',
      action: 'incident.open',
      feedId: 'stripe',
      incidentId: 'demo-stripe-1',
      title: 'Elevated API error rates',
      status: 'investigating',
      body: 'We are investigating elevated error rates on the Charges API.',
    },
    { at: '4s', action: 'status.set', feedId: 'github', status: 'degraded' },
    { at: '6s', action: 'sla.set', feedId: 'slack', slaTarget: 99.5, uptime30d: 99.55 },
    { at: '8s', action: 'evidence.set', feedId: 'okta', evidence: 'stale' },
    { at: '10s', action: 'score.set', feedId: 'aws-s3', score: 55 },
    {
      at: '14s',
      action: 'incident.update',
      feedId: 'stripe',
      incidentId: 'demo-stripe-1',
      status: 'identified',
      body: 'The issue has been identified and a fix is being implemented.',
    },
    { at: '18s', action: 'status.set', feedId: 'aws-s3', status: 'partial_outage' },
    { at: '20s', action: 'sla.set', feedId: 'slack', uptime30d: 99.3 },
    {
      at: '24s',
      action: 'incident.update',
      feedId: 'stripe',
      incidentId: 'demo-stripe-1',
      status: 'monitoring',
      body: 'A fix has been deployed and we are monitoring the results.',
    },
    {
      at: '26s',
      action: 'incident.open',
      feedId: 'github',
      incidentId: 'demo-github-1',
      title: 'Delayed Actions runs',
      status: 'investigating',
      body: 'Some Actions workflows are queued longer than usual.',
    },
    { at: '30s', action: 'evidence.set', feedId: 'okta', evidence: 'fresh' },
    { at: '34s', action: 'status.set', feedId: 'github', status: 'operational' },
    {
      at: '36s',
      action: 'incident.resolve',
      feedId: 'stripe',
      incidentId: 'demo-stripe-1',
      body: 'This incident has been resolved.',
    },
    { at: '40s', action: 'sla.set', feedId: 'slack', uptime30d: 99.9 },
    { at: '42s', action: 'status.set', feedId: 'aws-s3', status: 'operational' },
    {
      at: '44s',
      action: 'incident.update',
      feedId: 'github',
      incidentId: 'demo-github-1',
      status: 'identified',
      body: 'A misbehaving scheduler node was identified and removed.',
    },
    { at: '48s', action: 'score.set', feedId: 'okta', score: 58 },
    {
      at: '52s',
      action: 'incident.resolve',
      feedId: 'github',
      incidentId: 'demo-github-1',
      body: 'Actions runs are processing normally.',
    },
    { at: '55s', action: 'score.set', feedId: 'aws-s3', score: 90 },
    // Early warnings: github's SLA burning towards its target (sla.forecast), stripe's score
    // falling steadily (score.trend); the demo config uses one-minute horizons.
    { at: '3s', action: 'sla.set', feedId: 'github', slaTarget: 99.5, uptime30d: 99.9 },
    { at: '8s', action: 'sla.set', feedId: 'github', uptime30d: 99.85 },
    { at: '13s', action: 'sla.set', feedId: 'github', uptime30d: 99.8 },
    { at: '18s', action: 'sla.set', feedId: 'github', uptime30d: 99.75 },
    { at: '23s', action: 'sla.set', feedId: 'github', uptime30d: 99.7 },
    { at: '28s', action: 'sla.set', feedId: 'github', uptime30d: 99.65 },
    { at: '33s', action: 'sla.set', feedId: 'github', uptime30d: 99.6 },
    { at: '46s', action: 'sla.set', feedId: 'github', uptime30d: 99.9 },
    { at: '3s', action: 'score.set', feedId: 'stripe', score: 92 },
    { at: '8s', action: 'score.set', feedId: 'stripe', score: 89.5 },
    { at: '13s', action: 'score.set', feedId: 'stripe', score: 87 },
    { at: '18s', action: 'score.set', feedId: 'stripe', score: 84.5 },
    { at: '23s', action: 'score.set', feedId: 'stripe', score: 82 },
    { at: '28s', action: 'score.set', feedId: 'stripe', score: 79.5 },
    { at: '33s', action: 'score.set', feedId: 'stripe', score: 77 },
    { at: '38s', action: 'score.set', feedId: 'stripe', score: 74.5 },
  ],
};
