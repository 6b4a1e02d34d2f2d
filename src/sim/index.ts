/**
 * The bundled upstream simulator (docs/upstream.md): a faithful,
 * deterministic implementation of the upstream API's contract (docs/upstream-contract.md) for
 * development, tests and the demo.
 */
export {
  createSimulator,
  type FailureInjection,
  type ScenarioPlayback,
  type Simulator,
  type SimulatorOptions,
  type SimulatorStats,
} from './server.js';
export {
  loadScenario,
  parseDuration,
  parseScenario,
  scenarioSchema,
  type Scenario,
  type ScenarioAction,
  type ScenarioStep,
} from './scenario.js';
export {
  CATEGORIES,
  DEFAULT_SERVICES,
  MAX_SERVICES,
  WELL_KNOWN_FEED_IDS,
  buildCatalog,
  type CatalogEntry,
  type Category,
  type FeedType,
  type SourceKind,
} from './catalog.js';
export {
  EVIDENCE_STATES,
  INCIDENT_STATUSES,
  SIM_STATUSES,
  type Evidence,
  type IncidentStatus,
  type SimStatus,
  type Variant,
} from './state.js';
export { WORDINGS, type Wording } from './wording.js';
export { SimulatorError, type SimulatorErrorCode } from './errors.js';
export { demoScenario } from './scenarios/demo.js';
