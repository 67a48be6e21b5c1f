import type { AlbumRecord } from '../ports/album-store.js';

/** An album as the access rule sees it (access/rules.ts): it belongs to the account it was made in. */
export const albumObject = (a: AlbumRecord) => ({ kind: 'album' as const, id: a.id, accountId: a.accountId });
