import * as v from 'valibot';
import { BLOB_KINDS, UPLOAD_STATES } from '@strongroom/core';
import { ContentHash, Uuid } from './schemas.js';

/** Wire fields the upload and asset routes share. */
export const Hash = ContentHash;
export const Size = v.pipe(
  v.number(),
  v.safeInteger('must be a whole number'),
  v.minValue(1),
  v.maxValue(Number.MAX_SAFE_INTEGER),
  v.metadata({ format: 'int64' }),
);
export const Kind = v.picklist(BLOB_KINDS);
export const UploadState = v.picklist(UPLOAD_STATES);
export const IdParam = v.object({ id: Uuid });
