/**
 * Canned upstream bodies (both variants) and the normalized values they must produce. Shared by
 * the unit tests of `src/upstream` and the HTTP tests in `test/upstream-client.test.ts`.
 */
import type {
  IncidentList,
  ScoreReport,
  ServiceList,
  SlaReport,
  StatusSnapshot,
} from '../src/upstream/model.js';

export const T0 = 1_700_000_000;

// ---------------------------------------------------------------------------------------------
// Services

export const servicesA = {
  success: true,
  data: [
    {
      feedId: 'stripe',
      name: 'Stripe',
      url: 'https://status.stripe.com',
      canonicalUrl: 'https://statusdir.example/services/stripe',
      officialStatusUrl: 'https://status.stripe.com',
      feedType: 'statuspage',
      sourceKind: 'official',
      sourceLabel: 'Official status page',
      description: 'Payments platform',
      category: 'payments',
    },
    {
      feedId: 'acme-api',
      name: 'Acme API',
      url: 'https://api.acme.test/health',
      canonicalUrl: 'https://statusdir.example/services/acme-api',
      officialStatusUrl: null,
      feedType: 'healthcheck',
      sourceKind: 'reachability',
      sourceLabel: 'Endpoint reachability',
      description: 'Acme public API',
      futureField: { nested: [1, 2, 3] },
    },
    {
      feedId: 'orbit',
      name: 'Orbit',
      url: 'https://orbit.test',
      canonicalUrl: 'https://statusdir.example/services/orbit',
      officialStatusUrl: null,
      feedType: 'carrier-pigeon',
      sourceKind: 'satellite',
      sourceLabel: 'Satellite',
      description: 'Unknown kinds kept raw',
    },
  ],
  meta: { total: 3 },
};

export const servicesAExpected: ServiceList = {
  variant: 'A',
  total: 3,
  services: [
    {
      feedId: 'stripe',
      name: 'Stripe',
      url: 'https://status.stripe.com',
      canonicalUrl: 'https://statusdir.example/services/stripe',
      officialStatusUrl: 'https://status.stripe.com',
      feedType: 'statuspage',
      sourceKind: 'official',
      sourceKindRaw: 'official',
      sourceLabel: 'Official status page',
      description: 'Payments platform',
    },
    {
      feedId: 'acme-api',
      name: 'Acme API',
      url: 'https://api.acme.test/health',
      canonicalUrl: 'https://statusdir.example/services/acme-api',
      officialStatusUrl: null,
      feedType: 'healthcheck',
      sourceKind: 'reachability',
      sourceKindRaw: 'reachability',
      sourceLabel: 'Endpoint reachability',
      description: 'Acme public API',
    },
    {
      feedId: 'orbit',
      name: 'Orbit',
      url: 'https://orbit.test',
      canonicalUrl: 'https://statusdir.example/services/orbit',
      officialStatusUrl: null,
      feedType: 'carrier-pigeon',
      sourceKind: 'unknown',
      sourceKindRaw: 'satellite',
      sourceLabel: 'Satellite',
      description: 'Unknown kinds kept raw',
    },
  ],
};

export const servicesB = {
  success: true,
  data: [
    {
      feedId: 'stripe',
      name: 'Stripe',
      url: 'https://status.stripe.com',
      feedType: 'statuspage',
      description: 'Payments platform',
    },
    {
      feedId: 'github',
      name: 'GitHub',
      url: 'https://www.githubstatus.com',
      feedType: 'statuspage',
      description: 'Code hosting',
    },
  ],
  meta: { total: 2 },
};

export const servicesBExpected: ServiceList = {
  variant: 'B',
  total: 2,
  services: [
    {
      feedId: 'stripe',
      name: 'Stripe',
      url: 'https://status.stripe.com',
      canonicalUrl: null,
      officialStatusUrl: null,
      feedType: 'statuspage',
      sourceKind: 'unknown',
      sourceKindRaw: null,
      sourceLabel: null,
      description: 'Payments platform',
    },
    {
      feedId: 'github',
      name: 'GitHub',
      url: 'https://www.githubstatus.com',
      canonicalUrl: null,
      officialStatusUrl: null,
      feedType: 'statuspage',
      sourceKind: 'unknown',
      sourceKindRaw: null,
      sourceLabel: null,
      description: 'Code hosting',
    },
  ],
};

// ---------------------------------------------------------------------------------------------
// Status

export const statusA = {
  success: true,
  data: [
    {
      feedId: 'stripe',
      status: 'operational',
      name: 'Stripe',
      canonicalUrl: 'https://statusdir.example/services/stripe',
      officialStatusUrl: 'https://status.stripe.com',
      sourceKind: 'official',
      sourceLabel: 'Official status page',
      displayStatus: 'degraded',
      statusLabel: 'Degraded',
      availabilityStatus: 'operational',
      availabilityLabel: 'Operational',
      incidentScope: 'partial',
      incidentScopeLabel: 'Some components',
      summary: 'Elevated API error rates',
      verificationState: 'verified',
      verifiedAt: '2023-11-14T22:13:20+00:00',
      activeIncidentCount: 1,
      lastChanged: T0 - 60,
      lastSuccessfulCheck: T0 - 5,
    },
    {
      feedId: 'acme-api',
      name: 'Acme API',
      canonicalUrl: 'https://statusdir.example/services/acme-api',
      officialStatusUrl: null,
      sourceKind: 'reachability',
      sourceLabel: 'Endpoint reachability',
      statusLabel: 'Unreachable',
      availabilityStatus: 'major_outage',
      availabilityLabel: 'Major outage',
      incidentScope: 'none',
      incidentScopeLabel: null,
      summary: 'Endpoint does not answer',
      verificationState: 'stale',
      verifiedAt: '2023-11-14T22:00:00+00:00',
      activeIncidentCount: 0,
      lastChanged: T0 - 600,
      lastSuccessfulCheck: T0 - 900,
      endpointReachabilityStatus: 'unreachable',
    },
    {
      feedId: 'gossip',
      name: 'Gossip',
      canonicalUrl: 'https://statusdir.example/services/gossip',
      officialStatusUrl: null,
      sourceKind: 'community',
      sourceLabel: 'Community reports',
      displayStatus: 'sparkly',
      statusLabel: 'Sparkly',
      verificationState: 'unverified',
      lastChanged: T0 - 7,
      lastSuccessfulCheck: T0 - 7,
      endpointReachabilityStatus: 'reachable',
      someNewField: 'ignored',
    },
  ],
  meta: {
    total: 3,
    generated: T0,
    age_seconds: 12,
    includes: { incidents: false, maintenances: false },
  },
};

export const statusAExpected: StatusSnapshot = {
  variant: 'A',
  total: 3,
  generated: T0,
  ageSeconds: 12,
  includes: { incidents: false, maintenances: false },
  services: [
    {
      feedId: 'stripe',
      name: 'Stripe',
      variant: 'A',
      status: 'degraded',
      statusRaw: 'degraded',
      indicator: null,
      sourceKind: 'official',
      sourceKindRaw: 'official',
      canonicalUrl: 'https://statusdir.example/services/stripe',
      officialStatusUrl: 'https://status.stripe.com',
      summary: 'Elevated API error rates',
      verificationState: 'verified',
      verifiedAt: '2023-11-14T22:13:20+00:00',
      activeIncidentCount: 1,
      incidentScope: 'partial',
      lastChanged: T0 - 60,
      lastCheck: T0 - 5,
    },
    {
      feedId: 'acme-api',
      name: 'Acme API',
      variant: 'A',
      status: 'major_outage',
      statusRaw: 'unreachable',
      indicator: null,
      sourceKind: 'reachability',
      sourceKindRaw: 'reachability',
      canonicalUrl: 'https://statusdir.example/services/acme-api',
      officialStatusUrl: null,
      summary: 'Endpoint does not answer',
      verificationState: 'stale',
      verifiedAt: '2023-11-14T22:00:00+00:00',
      activeIncidentCount: 0,
      incidentScope: 'none',
      lastChanged: T0 - 600,
      lastCheck: T0 - 900,
    },
    {
      feedId: 'gossip',
      name: 'Gossip',
      variant: 'A',
      status: 'unknown',
      statusRaw: 'sparkly',
      indicator: null,
      sourceKind: 'community',
      sourceKindRaw: 'community',
      canonicalUrl: 'https://statusdir.example/services/gossip',
      officialStatusUrl: null,
      summary: null,
      verificationState: 'unverified',
      verifiedAt: null,
      activeIncidentCount: null,
      incidentScope: null,
      lastChanged: T0 - 7,
      lastCheck: T0 - 7,
    },
  ],
};

export const statusB = {
  success: true,
  data: [
    { feedId: 'stripe', status: 'up', lastCheck: T0 - 30, indicator: 'none' },
    { feedId: 'github', status: 'down', lastCheck: T0 - 31, indicator: 'critical' },
    { feedId: 'slack', lastCheck: T0 - 32, indicator: 'minor' },
    { feedId: 'zoom', status: 'wobbly', lastCheck: T0 - 33, indicator: 'none', extra: true },
    { feedId: 'fastly', status: 'maintenance', lastCheck: T0 - 34, indicator: 'maintenance' },
  ],
  meta: { total: 5, generated: T0 - 30, age_seconds: 30 },
};

const stateB = {
  name: null,
  variant: 'B',
  sourceKind: 'unknown',
  sourceKindRaw: null,
  canonicalUrl: null,
  officialStatusUrl: null,
  summary: null,
  verificationState: null,
  verifiedAt: null,
  activeIncidentCount: null,
  incidentScope: null,
  lastChanged: null,
} as const;

export const statusBExpected: StatusSnapshot = {
  variant: 'B',
  total: 5,
  generated: T0 - 30,
  ageSeconds: 30,
  includes: null,
  services: [
    {
      ...stateB,
      feedId: 'stripe',
      status: 'operational',
      statusRaw: 'up',
      indicator: 'none',
      lastCheck: T0 - 30,
    },
    {
      ...stateB,
      feedId: 'github',
      status: 'major_outage',
      statusRaw: 'down',
      indicator: 'critical',
      lastCheck: T0 - 31,
    },
    {
      ...stateB,
      feedId: 'slack',
      status: 'degraded',
      statusRaw: 'minor',
      indicator: 'minor',
      lastCheck: T0 - 32,
    },
    {
      ...stateB,
      feedId: 'zoom',
      status: 'unknown',
      statusRaw: 'wobbly',
      indicator: 'none',
      lastCheck: T0 - 33,
    },
    {
      ...stateB,
      feedId: 'fastly',
      status: 'maintenance',
      statusRaw: 'maintenance',
      indicator: 'maintenance',
      lastCheck: T0 - 34,
    },
  ],
};

// ---------------------------------------------------------------------------------------------
// Incidents

export const incidentsA = {
  success: true,
  data: [
    {
      service: 'Stripe',
      feedId: 'stripe',
      id: 'inc-1',
      title: 'Elevated API errors',
      status: 'identified',
      started: T0 - 600,
      sourceKind: 'official',
      verificationState: 'verified',
      verifiedAt: '2023-11-14T22:13:20+00:00',
      officialStatusUrl: 'https://status.stripe.com',
      canonicalServiceUrl: 'https://statusdir.example/services/stripe',
      updates: [
        { id: 'u1', status: 'investigating', body: 'We are looking into it', created: T0 - 600 },
        {
          id: 'u2',
          status: 'identified',
          message: 'Cause found',
          created_at: '2023-11-14T22:10:00Z',
        },
        { text: 'no time here' },
        42,
      ],
    },
  ],
  meta: { total: 1, services_affected: 1, sourceKind: 'official', verificationState: 'verified' },
};

export const incidentsAExpected: IncidentList = {
  variant: 'A',
  total: 1,
  servicesAffected: 1,
  sourceKind: 'official',
  verificationState: 'verified',
  incidents: [
    {
      id: 'inc-1',
      feedId: 'stripe',
      serviceName: 'Stripe',
      title: 'Elevated API errors',
      status: 'identified',
      statusRaw: 'identified',
      started: T0 - 600,
      updates: [
        { status: 'investigating', text: 'We are looking into it', at: T0 - 600 },
        {
          status: 'identified',
          text: 'Cause found',
          at: Date.parse('2023-11-14T22:10:00Z') / 1000,
        },
        { status: null, text: 'no time here', at: null },
        { status: null, text: null, at: null },
      ],
      sourceKind: 'official',
      verificationState: 'verified',
      verifiedAt: '2023-11-14T22:13:20+00:00',
      officialStatusUrl: 'https://status.stripe.com',
      canonicalServiceUrl: 'https://statusdir.example/services/stripe',
    },
  ],
};

/** Variant A when verified provider evidence is unavailable. */
export const incidentsAUnverified = {
  success: true,
  data: [],
  meta: { total: 0, services_affected: 0, sourceKind: 'official', verificationState: 'unverified' },
};

export const incidentsB = {
  success: true,
  data: [
    {
      service: 'GitHub',
      id: 'gh-9',
      title: 'Actions delayed',
      status: 'monitoring',
      started: T0 - 3600,
      updates: [{ id: 'x', status: 'monitoring', body: 'Fix deployed', created: T0 - 60 }],
    },
    {
      service: 'Zoom',
      id: 77,
      title: 'Audio issues',
      status: 'postmortem',
      started: T0 - 7200,
      updates: [],
      shiny: 'extra',
    },
  ],
  meta: { total: 2, services_affected: 2 },
};

const incidentB = {
  feedId: null,
  sourceKind: null,
  verificationState: null,
  verifiedAt: null,
  officialStatusUrl: null,
  canonicalServiceUrl: null,
} as const;

export const incidentsBExpected: IncidentList = {
  variant: 'B',
  total: 2,
  servicesAffected: 2,
  sourceKind: null,
  verificationState: null,
  incidents: [
    {
      ...incidentB,
      id: 'gh-9',
      serviceName: 'GitHub',
      title: 'Actions delayed',
      status: 'monitoring',
      statusRaw: 'monitoring',
      started: T0 - 3600,
      updates: [{ status: 'monitoring', text: 'Fix deployed', at: T0 - 60 }],
    },
    {
      ...incidentB,
      id: '77',
      serviceName: 'Zoom',
      title: 'Audio issues',
      status: 'unknown',
      statusRaw: 'postmortem',
      started: T0 - 7200,
      updates: [],
    },
  ],
};

// ---------------------------------------------------------------------------------------------
// SLA, scores, rankings

export const sla = {
  success: true,
  data: {
    summary: { services_tracked: 4, compliance_rate: 50, services_breaching_sla: 1 },
    services: [
      {
        feedId: 'stripe',
        name: 'Stripe',
        sla_target: 99.9,
        uptime_30d: 99.95,
        status: 'met',
        margin: 0.05,
      },
      {
        feedId: 'github',
        name: 'GitHub',
        sla_target: 99.9,
        uptime_30d: 99.92,
        status: 'at_risk',
        margin: 0.02,
      },
      {
        feedId: 'zoom',
        name: 'Zoom',
        sla_target: 99.95,
        uptime_30d: 99.5,
        status: 'breached',
        margin: -0.45,
      },
      {
        feedId: 'slack',
        name: 'Slack',
        sla_target: 99.9,
        uptime_30d: 99.9,
        status: 'on_fire',
        margin: 0,
      },
    ],
  },
};

export const slaExpected: SlaReport = {
  summary: { servicesTracked: 4, complianceRate: 50, servicesBreachingSla: 1 },
  services: [
    {
      feedId: 'stripe',
      name: 'Stripe',
      slaTarget: 99.9,
      uptime30d: 99.95,
      status: 'met',
      statusRaw: 'met',
      margin: 0.05,
    },
    {
      feedId: 'github',
      name: 'GitHub',
      slaTarget: 99.9,
      uptime30d: 99.92,
      status: 'at_risk',
      statusRaw: 'at_risk',
      margin: 0.02,
    },
    {
      feedId: 'zoom',
      name: 'Zoom',
      slaTarget: 99.95,
      uptime30d: 99.5,
      status: 'breached',
      statusRaw: 'breached',
      margin: -0.45,
    },
    {
      feedId: 'slack',
      name: 'Slack',
      slaTarget: 99.9,
      uptime30d: 99.9,
      status: 'unknown',
      statusRaw: 'on_fire',
      margin: 0,
    },
  ],
};

export const scores = {
  success: true,
  data: {
    summary: { services_scored: 2, avg_score: 81.5, top_service: 'Stripe' },
    scores: [
      {
        feedId: 'stripe',
        name: 'Stripe',
        score: 97.2,
        grade: 'A+',
        tier: 'excellent',
        components: { uptime: 99.9, incidents: 95, resolution: 96.5, sla: 100 },
      },
      {
        feedId: 'acme',
        name: 'Acme',
        score: 65.8,
        grade: 'Z',
        tier: 'legendary',
        components: { uptime: 80, newComponent: 3 },
      },
    ],
  },
};

export const scoresExpected: ScoreReport = {
  summary: { servicesScored: 2, avgScore: 81.5, topService: 'Stripe' },
  scores: [
    {
      feedId: 'stripe',
      name: 'Stripe',
      score: 97.2,
      grade: 'A+',
      tier: 'excellent',
      components: { uptime: 99.9, incidents: 95, resolution: 96.5, sla: 100 },
    },
    {
      feedId: 'acme',
      name: 'Acme',
      score: 65.8,
      grade: 'Z',
      tier: 'legendary',
      components: { uptime: 80, incidents: null, resolution: null, sla: null },
    },
  ],
};

export const rankings = {
  success: true,
  data: {
    month: '2025-10',
    rankings: [
      { rank: 1, feedId: 'stripe', uptime_30d: 99.99, uptime_90d: 99.97 },
      { rank: 2, feedId: 'github', uptime_30d: 99.9, uptime_90d: null },
    ],
  },
};

export const analytics = {
  success: true,
  data: { mttr: { overall_minutes: 42.5 }, by_weekday: [1, 2, 3, 4, 5, 6, 7], flags: [true] },
};

/** `n` Variant A catalog rows, for the large-body test. */
export function manyServices(n: number): {
  success: true;
  data: unknown[];
  meta: { total: number };
} {
  const data: unknown[] = [];
  for (let i = 0; i < n; i++) {
    data.push({
      feedId: `svc-${i}`,
      name: `Service number ${i}`,
      url: `https://status.svc-${i}.example.com/api/v2/summary.json`,
      canonicalUrl: `https://statusdir.example/services/svc-${i}`,
      officialStatusUrl: i % 3 === 0 ? null : `https://status.svc-${i}.example.com`,
      feedType: i % 3 === 0 ? 'healthcheck' : 'statuspage',
      sourceKind: i % 3 === 0 ? 'reachability' : 'official',
      sourceLabel: i % 3 === 0 ? 'Endpoint reachability' : 'Official status page',
      description: `A monitored third-party service used by many teams (#${i}) for testing size`,
    });
  }
  return { success: true, data, meta: { total: n } };
}
