/**
 * The parts of the core a client runs itself, re-exported so an app depends on this package alone.
 * Each keeps the core's own documentation.
 */

/** The device-cohort hash: SHA-256 over canonical CBOR [domain, account id, platform tag, primary id]. */
export { cohortHash, PLATFORM_TAGS } from '@strongroom/core';
/** One of `ios`, `android`, `macos`, `windows`, `linux`. */
export type { PlatformTag } from '@strongroom/core';
/** The member side of an album upgrade: the pure machine and the service that runs it over a store and a transport. */
export { MemberUpgradeService, memberTransition, initialMemberState, frozenStateHash } from '@strongroom/core';
/** The member machine's state, events, effects and ports. */
export type {
  MemberUpgradeServiceDeps,
  MemberState,
  MemberEvent,
  MemberEffect,
  MemberPhase,
  MemberIntent,
  OutgoingWrite,
  QueuedWrite,
  MemberUpgradeStore,
  WriteTransport,
} from '@strongroom/core';
/** The client catalog migrator: forward only, refusing a catalog newer than the app untouched. */
export { migrateCatalog, planCatalogMigration } from '@strongroom/core';
/** The catalog database port the migrator runs over, and one migration step. */
export type { CatalogDatabase, CatalogStep } from '@strongroom/core';
