CREATE TABLE "sync_changes" (
	"account_id" text NOT NULL,
	"kind" text NOT NULL,
	"object_id" text NOT NULL,
	"op" text NOT NULL,
	"seq" bigint NOT NULL,
	"at" bigint NOT NULL,
	CONSTRAINT "sync_changes_account_id_kind_object_id_pk" PRIMARY KEY("account_id","kind","object_id")
);
--> statement-breakpoint
CREATE TABLE "sync_heads" (
	"account_id" text PRIMARY KEY NOT NULL,
	"seq" bigint DEFAULT 0 NOT NULL,
	"pruned_through" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "sync_changes_seq_idx" ON "sync_changes" USING btree ("account_id","seq");
--> statement-breakpoint
INSERT INTO sync_changes (account_id, kind, object_id, op, seq, at)
SELECT account_id, kind, object_id, 'upsert', row_number() OVER (PARTITION BY account_id ORDER BY at, kind, object_id), at FROM (
  SELECT account_id, 'album' AS kind, id AS object_id, created_at AS at FROM albums
  UNION ALL SELECT owner_id, 'asset', id, created_at FROM assets WHERE state IN ('live', 'trashed')
  UNION ALL SELECT owner_id, 'link', id_hash, created_at FROM links WHERE revoked_at IS NULL
) AS existing;
--> statement-breakpoint
INSERT INTO sync_heads (account_id, seq, pruned_through) SELECT account_id, max(seq), 0 FROM sync_changes GROUP BY account_id;
