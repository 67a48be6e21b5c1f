CREATE TABLE "upload_segments" (
	"upload_id" text NOT NULL,
	"start" bigint NOT NULL,
	"length" bigint NOT NULL,
	"segment_id" text NOT NULL,
	CONSTRAINT "upload_segments_upload_id_start_pk" PRIMARY KEY("upload_id","start")
);
--> statement-breakpoint
ALTER TABLE "upload_segments" ADD CONSTRAINT "upload_segments_upload_id_upload_sessions_id_fk" FOREIGN KEY ("upload_id") REFERENCES "public"."upload_sessions"("id") ON DELETE cascade ON UPDATE no action;