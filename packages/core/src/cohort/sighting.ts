import type { CohortRecord } from '../ports/cohort-map.js';

/**
 * A cohort seen again at `at`: the map keeps the earliest sighting and the latest one, whatever
 * order concurrent sign-ins (or processes with slightly different clocks) report them in.
 */
export function cohortSighting(existing: CohortRecord | null, cohortHash: string, at: number): CohortRecord {
  if (existing === null) return { cohortHash, firstSeen: at, lastSeen: at };
  return { cohortHash, firstSeen: Math.min(existing.firstSeen, at), lastSeen: Math.max(existing.lastSeen, at) };
}
