/**
 * The simulator's deterministic service catalog: the same (count, seed) always yields a
 * byte-identical catalog, and entry i never depends on the catalog size (a 2,000-entry catalog is
 * the prefix of a 100,000-entry one). The first ten entries are well-known providers for demos.
 */
import { SimulatorError } from './errors.js';
import { Rng } from './prng.js';

export const CATEGORIES = [
  'payments',
  'cloud',
  'devtools',
  'communication',
  'observability',
  'identity',
  'ecommerce',
  'ai',
  'security',
  'data',
] as const;
export type Category = (typeof CATEGORIES)[number];

export type SourceKind = 'official' | 'reachability' | 'community';
export type FeedType = 'statuspage' | 'healthcheck' | 'rss';

export const MAX_SERVICES = 100_000;
export const DEFAULT_SERVICES = 2_000;

/**
 * One catalog entry. `category` is internal: the wire Service has no category field; the
 * category only works as the `category` query filter of GET /services.
 */
export interface CatalogEntry {
  feedId: string;
  name: string;
  url: string;
  canonicalUrl: string;
  officialStatusUrl: string | null;
  feedType: FeedType;
  sourceKind: SourceKind;
  sourceLabel: string;
  description: string;
  category: Category;
}

export const SOURCE_LABELS: Record<SourceKind, string> = {
  official: 'Official provider status page',
  reachability: 'Endpoint reachability check',
  community: 'Community reports',
};

const FEED_TYPES: Record<SourceKind, FeedType> = {
  official: 'statuspage',
  reachability: 'healthcheck',
  community: 'rss',
};

const CANONICAL_BASE = 'https://status-directory.example/services/';

const WELL_KNOWN: readonly {
  feedId: string;
  name: string;
  category: Category;
  statusUrl: string;
  description: string;
}[] = [
  {
    feedId: 'stripe',
    name: 'Stripe',
    category: 'payments',
    statusUrl: 'https://status.stripe.com',
    description: 'Online payment processing APIs',
  },
  {
    feedId: 'adyen',
    name: 'Adyen',
    category: 'payments',
    statusUrl: 'https://status.adyen.com',
    description: 'Payment platform and acquiring',
  },
  {
    feedId: 'github',
    name: 'GitHub',
    category: 'devtools',
    statusUrl: 'https://www.githubstatus.com',
    description: 'Code hosting, pull requests and Actions',
  },
  {
    feedId: 'slack',
    name: 'Slack',
    category: 'communication',
    statusUrl: 'https://status.slack.com',
    description: 'Team messaging',
  },
  {
    feedId: 'aws-s3',
    name: 'Amazon S3',
    category: 'cloud',
    statusUrl: 'https://health.aws.amazon.com/health/status',
    description: 'Object storage',
  },
  {
    feedId: 'cloudflare',
    name: 'Cloudflare',
    category: 'cloud',
    statusUrl: 'https://www.cloudflarestatus.com',
    description: 'CDN, DNS and edge network',
  },
  {
    feedId: 'twilio',
    name: 'Twilio',
    category: 'communication',
    statusUrl: 'https://status.twilio.com',
    description: 'SMS, voice and messaging APIs',
  },
  {
    feedId: 'datadog',
    name: 'Datadog',
    category: 'observability',
    statusUrl: 'https://status.datadoghq.com',
    description: 'Monitoring and observability platform',
  },
  {
    feedId: 'pagerduty',
    name: 'PagerDuty',
    category: 'observability',
    statusUrl: 'https://status.pagerduty.com',
    description: 'Incident response and on-call',
  },
  {
    feedId: 'okta',
    name: 'Okta',
    category: 'identity',
    statusUrl: 'https://status.okta.com',
    description: 'Identity and access management',
  },
];

/** The feedIds of the well-known head of every catalog, in order. */
export const WELL_KNOWN_FEED_IDS: readonly string[] = WELL_KNOWN.map((w) => w.feedId);

const SYLLABLES_A = [
  'Zen',
  'Cor',
  'Lum',
  'Vex',
  'Nim',
  'Sol',
  'Tri',
  'Arc',
  'Bri',
  'Cal',
  'Dex',
  'Fal',
  'Gal',
  'Hal',
  'Ion',
  'Jet',
  'Kin',
  'Lyr',
  'Mer',
  'Nov',
  'Orb',
  'Pix',
  'Qua',
  'Rho',
  'Syn',
  'Tal',
  'Ul',
  'Ver',
  'Wav',
  'Xen',
  'Yar',
  'Zep',
] as const;
const SYLLABLES_B = [
  'a',
  'e',
  'i',
  'o',
  'u',
  'ra',
  'lo',
  've',
  'ni',
  'ta',
  'ri',
  'do',
  'ly',
  'me',
  'sa',
] as const;
const SYLLABLES_C = [
  'x',
  'n',
  'tra',
  'nix',
  'dex',
  'ly',
  'ra',
  'on',
  'ia',
  'um',
  'io',
  'lab',
  'sys',
  'hub',
  'ware',
  'base',
  'flow',
  'grid',
  'wise',
  'ify',
  'ion',
  'ex',
  'ora',
  'ent',
] as const;

const PRODUCT_WORDS: Record<Category, readonly [string, ...string[]]> = {
  payments: ['Pay', 'Payments', 'Checkout', 'Billing', 'Wallet', 'Ledger'],
  cloud: ['Cloud', 'Compute', 'Storage', 'CDN', 'Edge', 'Hosting'],
  devtools: ['CI', 'Git', 'Registry', 'Deploy', 'Build', 'IDE'],
  communication: ['Chat', 'Mail', 'SMS', 'Voice', 'Meet', 'Push'],
  observability: ['Monitor', 'Logs', 'Trace', 'Metrics', 'APM', 'Uptime'],
  identity: ['ID', 'Auth', 'SSO', 'Directory', 'Login', 'Passkeys'],
  ecommerce: ['Shop', 'Cart', 'Commerce', 'Store', 'Orders', 'Catalog'],
  ai: ['AI', 'ML', 'Vision', 'Speech', 'Inference', 'Agents'],
  security: ['Guard', 'Shield', 'Secrets', 'Scan', 'WAF', 'Vault'],
  data: ['DB', 'Warehouse', 'Stream', 'Queue', 'Search', 'Cache'],
};

const CATEGORY_TEXT: Record<Category, string> = {
  payments: 'payment processing',
  cloud: 'cloud infrastructure',
  devtools: 'developer tooling',
  communication: 'communication APIs',
  observability: 'monitoring and observability',
  identity: 'identity and access',
  ecommerce: 'e-commerce platform',
  ai: 'AI and machine learning APIs',
  security: 'security services',
  data: 'data infrastructure',
};

function slugOf(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

function generatedName(rng: Rng, category: Category): string {
  const brand = rng.pick(SYLLABLES_A) + rng.pick(SYLLABLES_B) + rng.pick(SYLLABLES_C);
  return `${brand} ${rng.pick(PRODUCT_WORDS[category])}`;
}

function generatedEntry(index: number, seed: number, taken: Set<string>): CatalogEntry {
  const rng = Rng.for(seed, 'catalog', index);
  const feedId = `svc-${String(index + 1).padStart(5, '0')}`;
  const category = rng.pick(CATEGORIES);
  const draw = rng.float();
  const sourceKind: SourceKind =
    draw < 0.6 ? 'official' : draw < 0.9 ? 'reachability' : 'community';
  let name = generatedName(rng, category);
  for (let attempt = 0; taken.has(name) && attempt < 8; attempt++) {
    name = generatedName(rng, category);
  }
  if (taken.has(name)) name = `${name} ${index + 1}`;
  taken.add(name);
  const slug = slugOf(name);
  const statusUrl = `https://status.${slug}.example`;
  const url =
    sourceKind === 'official'
      ? statusUrl
      : sourceKind === 'reachability'
        ? `https://api.${slug}.example/health`
        : `https://community-status.example/${slug}/feed.rss`;
  return {
    feedId,
    name,
    url,
    canonicalUrl: CANONICAL_BASE + feedId,
    officialStatusUrl: sourceKind === 'official' ? statusUrl : null,
    feedType: FEED_TYPES[sourceKind],
    sourceKind,
    sourceLabel: SOURCE_LABELS[sourceKind],
    description: `${name}: ${CATEGORY_TEXT[category]}`,
    category,
  };
}

/** Builds the catalog: `count` entries (1..100,000), deterministic for `seed`. */
export function buildCatalog(count: number = DEFAULT_SERVICES, seed = 42): CatalogEntry[] {
  if (!Number.isInteger(count) || count < 1 || count > MAX_SERVICES) {
    throw new SimulatorError(
      'sim_invalid_option',
      `services must be an integer from 1 to ${MAX_SERVICES}, got ${count}`,
    );
  }
  if (!Number.isInteger(seed)) {
    throw new SimulatorError('sim_invalid_option', `seed must be an integer, got ${seed}`);
  }
  const taken = new Set<string>();
  const entries: CatalogEntry[] = [];
  for (let i = 0; i < count; i++) {
    const known = WELL_KNOWN[i];
    if (known) {
      taken.add(known.name);
      entries.push({
        feedId: known.feedId,
        name: known.name,
        url: known.statusUrl,
        canonicalUrl: CANONICAL_BASE + known.feedId,
        officialStatusUrl: known.statusUrl,
        feedType: 'statuspage',
        sourceKind: 'official',
        sourceLabel: SOURCE_LABELS.official,
        description: known.description,
        category: known.category,
      });
    } else {
      entries.push(generatedEntry(i, seed, taken));
    }
  }
  return entries;
}
