export interface CohortRecord {
  readonly cohortHash: string;
  readonly firstSeen: number;
  readonly lastSeen: number;
}

/** The durable device_cohorts map. Outlives sessions; advisory only. */
export interface CohortMap {
  /** Records a sighting as core's `cohortSighting` merges it (earliest first_seen, latest last_seen), atomically. */
  recordCohort(accountId: string, cohortHash: string, at: number): Promise<void>;
  listCohorts(accountId: string): Promise<CohortRecord[]>;
}
