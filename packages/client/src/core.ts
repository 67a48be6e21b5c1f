/**
 * The parts of the core a client runs itself, re-exported so an app depends on this package alone.
 * Names the core documents keep its documentation; the others are documented here.
 */
import {
  initialMemberState as coreInitialMemberState,
  type MemberEffect as CoreMemberEffect,
  type MemberEvent as CoreMemberEvent,
  type MemberIntent as CoreMemberIntent,
  type MemberState as CoreMemberState,
  type MemberUpgradeServiceDeps as CoreMemberUpgradeServiceDeps,
  type PlatformTag as CorePlatformTag,
} from '@strongroom/core';

export { cohortHash, PLATFORM_TAGS } from '@strongroom/core';
export { MemberUpgradeService, memberTransition, frozenStateHash } from '@strongroom/core';
export type { MemberPhase, OutgoingWrite, QueuedWrite, MemberUpgradeStore, WriteTransport } from '@strongroom/core';
export { migrateCatalog, planCatalogMigration } from '@strongroom/core';
export type { CatalogDatabase, CatalogStep } from '@strongroom/core';

/** A platform a cohort hash is built for: `ios`, `android`, `macos`, `windows` or `linux`. */
export type PlatformTag = CorePlatformTag;

/**
 * What a member persists per album during an upgrade: the album's pin and phase, the live intent,
 * the writes held back until the upgrade, the outbox of writes not yet acknowledged, and the fork
 * once cut over. Store it as it is; `MemberUpgradeService` loads and saves it.
 */
export type MemberState = CoreMemberState;

/**
 * What happens to a member: an upgrade intent arrives, the app writes locally, the server reports
 * its phase, the tombstone commit arrives, or a write was acknowledged (`sent`).
 */
export type MemberEvent = CoreMemberEvent;

/** What the app must do after a transition: reject a competing intent, learn of an abort, or cut over to the fork. */
export type MemberEffect = CoreMemberEffect;

/** The upgrade a member is taking part in: its intent id and the versions it moves between. */
export type MemberIntent = CoreMemberIntent;

/** What `MemberUpgradeService` runs over: the app's store for member state and its transport for writes. */
export type MemberUpgradeServiceDeps = CoreMemberUpgradeServiceDeps;

/** The state of an album a member has never seen an upgrade for: phase `normal`, nothing queued. */
export const initialMemberState: typeof coreInitialMemberState = coreInitialMemberState;
