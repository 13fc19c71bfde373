-- 0003_toast_lz4.sql — compress long steps and record lines with lz4.
--
-- jsonb steps of ~25 or more steps pass the 2 kB TOAST threshold, and pglz
-- spent ~20% of the server time of an upload of new programs compressing
-- them (registry/upload_store.cc; bench_upload_store: 13.7k -> 16.2k new
-- records/s). lz4 is several times faster both ways, so readers (training)
-- gain too; it compresses a little less (steps: ~720 bytes against ~520).
-- Values stored before keep their method. A server built without lz4 keeps
-- pglz rather than failing the migration.
DO $$
BEGIN
  ALTER TABLE programs ALTER COLUMN steps SET COMPRESSION lz4;
  ALTER TABLE measurements ALTER COLUMN record SET COMPRESSION lz4;
  ALTER TABLE candidates ALTER COLUMN record SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'lz4 is not supported by this server; TOAST keeps pglz';
END $$;
