-- 0002_upload_indexes.sql — indexes and a cheaper check for
-- registry/upload_store.cc (bulk uploads).
--
-- uploads_body_sha256: an upload sent without an Idempotency-Key is
-- recognised as a retry by (platform, kind, body hash), looked up on every
-- upload (UploadStore::find_previous and again inside commit()).
CREATE INDEX uploads_body_sha256 ON uploads (platform_id, kind, body_sha256);

-- candidates_platform_id: a platform's candidate pool in upload order
-- (UploadStore::for_each_record), like measurements_platform_id.
CREATE INDEX candidates_platform_id ON candidates (platform_id, id);

-- programs.id: the same rule as 0001's id ~ '^[0-9a-f]{16,128}$', spelled
-- so that it is cheap. PostgreSQL's regex engine unrolls the bounded repeat
-- {16,128} into a large automaton: ~25 us a row, a quarter of the time of an
-- upload of new programs, against ~0.4 us for this form.
ALTER TABLE programs DROP CONSTRAINT programs_id_check;
ALTER TABLE programs ADD CONSTRAINT programs_id_check
  CHECK (octet_length(id) BETWEEN 16 AND 128 AND id ~ '^[0-9a-f]+$');
