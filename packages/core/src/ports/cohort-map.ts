export interface CohortRecord {
  readonly cohortHash: string;
  readonly firstSeen: number;
  readonly lastSeen: number;
}

/** The durable device_cohorts map. Outlives sessions; advisory only. */
export interface CohortMap {
  /** Upsert: first_seen is kept, last_seen moves to `at`. */
  recordCohort(accountId: string, cohortHash: string, at: number): Promise<void>;
  listCohorts(accountId: string): Promise<CohortRecord[]>;
}
