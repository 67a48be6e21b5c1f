/** The `typ` header of a storage receipt: never mistaken for an access or capability token. */
export const RECEIPT_TYP = 'svc-receipt+jwt';

/** Exactly the claims a storage receipt carries. */
export interface ReceiptClaims {
  /** The server's base URL. */
  readonly iss: string;
  /** The uploader's account id. */
  readonly sub: string;
  readonly upload_id: string;
  /** Hex SHA-256 of the stored ciphertext. */
  readonly content_hash: string;
  /** Bytes stored under that hash. */
  readonly size: number;
  /** The account whose ledger the stored bytes are charged to. */
  readonly charged_to: string;
  /** Unix seconds. */
  readonly iat: number;
}

export interface ReceiptFacts {
  readonly issuer: string;
  readonly uploaderId: string;
  readonly uploadId: string;
  readonly contentHash: string;
  readonly size: number;
  readonly chargedTo: string;
}

/** The claims attesting that `facts` held at `now` (ms). */
export function receiptClaims(facts: ReceiptFacts, now: number): ReceiptClaims {
  return {
    iss: facts.issuer,
    sub: facts.uploaderId,
    upload_id: facts.uploadId,
    content_hash: facts.contentHash,
    size: facts.size,
    charged_to: facts.chargedTo,
    iat: Math.floor(now / 1000),
  };
}
