import type { UploadState } from './upload-sessions.js';

/**
 * A blob received from a federated peer on its way into the receiver's cache: a reservation of
 * `declaredSize` against the (receiver, peer) budget while it is open.
 */
export interface FederatedIntakeRecord {
  readonly id: string;
  /** The account whose request opened it (the uploader). */
  readonly uploaderId: string;
  /** Whom the cache charges: the uploader, or its sponsor. */
  readonly receiverId: string;
  readonly peer: string;
  readonly declaredSize: number;
  readonly contentHash: string;
  /** Pending, WaitingForProcessing (bytes staged), then Completed, Merged or Cancelled. */
  readonly state: UploadState;
  readonly receivedSize: number | null;
  readonly createdAt: number;
  readonly expiresAt: number;
}

export type IntakeOutcome = 'reserved' | 'over_budget';

/** Open federated cache fills. */
export interface FederatedIntakeStore {
  /**
   * Atomically applies core's `decideIntake`: the declared sizes of the receiver's open, unexpired
   * intakes from the same peer plus this one must stay within `room` (null = unlimited). Nothing
   * is written when refused. An intake already terminal (a merge found at creation) is written as it
   * is, reserving nothing.
   */
  openIntake(intake: FederatedIntakeRecord, room: number | null, now: number): Promise<IntakeOutcome>;
  findIntake(id: string): Promise<FederatedIntakeRecord | null>;
  /** Records the staged bytes' size on an open, unexpired intake. False when it is not open. */
  markReceived(id: string, size: number, now: number): Promise<boolean>;
  /** Moves an open intake to a terminal state (Completed, Merged or Cancelled). False when not open. */
  closeIntake(id: string, state: 'Completed' | 'Merged' | 'Cancelled'): Promise<boolean>;
  /** Writes Expired on every open intake whose time ran out; returns their ids (their staged bytes can go). */
  expireIntakes(now: number): Promise<string[]>;
}
