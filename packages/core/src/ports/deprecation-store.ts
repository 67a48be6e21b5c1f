import type { Result } from '../errors.js';
import type { AnnounceRefusal, DeprecationAnnouncement, DeprecationPolicy } from '../versioning/deprecation.js';

/** Protocol deprecation announcements, shared by every process. Never changed or removed once made. */
export interface DeprecationStore {
  /** Every announcement ever made, in any order. */
  listDeprecations(): Promise<DeprecationAnnouncement[]>;
  /**
   * Records `candidate` if core's `decideAnnouncement` admits it against the stored announcements,
   * decided inside the store's transaction (two racing announcements are judged one after the other).
   */
  announceDeprecation(
    candidate: DeprecationAnnouncement,
    policy: DeprecationPolicy,
  ): Promise<Result<DeprecationAnnouncement, AnnounceRefusal>>;
}
