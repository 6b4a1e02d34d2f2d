export * from './transition.js';
export * from './state.js';
export * from './result.js';
export { diffStatus, evidenceOf, type StatusDiffInput } from './status.js';
export {
  diffIncidents,
  planIncidents,
  vanishedFeeds,
  unseenIncidents,
  type IncidentsDiffInput,
  type IncidentsPlan,
} from './incidents.js';
export { diffSla, slaClass, slaEvent, type SlaDiffInput } from './sla.js';
export { diffScores, type ScoreDiffInput } from './score.js';
export {
  diffUpstream,
  type PollOutcome,
  type UpstreamDiffInput,
  type UpstreamDiffResult,
} from './upstream.js';
