-- 0004_bulk_uploads.sql — a schema that bulk uploads can fill at COPY speed
-- (registry/upload_store.cc; bench/upload_e2e.sh). Server CPU to store 50k
-- real x86 records of new programs: 2.9 s before (COPY into staging, then
-- INSERT ... SELECT), 0.45 s after, with upload_store.cc's binary COPY
-- straight into the tables.
--
-- 1. programs.steps is dropped. The steps of a program are in the record line
--    of every measurement and candidate that refers to it (a program is only
--    ever inserted together with one), so the column was a second copy; as
--    jsonb it cost ~20 us a program to parse, as text still ~15 us (TOAST,
--    WAL). Nobody read it: features and training parse the record lines.
--    A program row is now (id, task_id, created_at).
ALTER TABLE programs DROP COLUMN steps;

-- 2. No per-row foreign-key checks on the bulk tables. They were ~1/3 of the
--    server CPU of an upload (one trigger and one index probe per key per
--    row). The only writer of these tables is registry/upload_store.cc, which
--    inserts the task and program of every row, and the upload row, in the
--    same transaction as the rows, and platforms are never deleted; the
--    invariant (no orphan) is tested through UploadStore
--    (tests/registry/upload_store_test.cc, NoOrphanRows*). Other tables keep
--    their foreign keys (sample_request_items -> programs, ...).
ALTER TABLE programs DROP CONSTRAINT programs_task_id_fkey;
ALTER TABLE measurements
  DROP CONSTRAINT measurements_platform_id_fkey,
  DROP CONSTRAINT measurements_program_id_fkey,
  DROP CONSTRAINT measurements_upload_id_fkey;
ALTER TABLE candidates
  DROP CONSTRAINT candidates_platform_id_fkey,
  DROP CONSTRAINT candidates_program_id_fkey,
  DROP CONSTRAINT candidates_upload_id_fkey;

-- 3. The dedup key of a measurement becomes a 16-byte hash instead of the
--    wide UNIQUE (platform_id, program_id, timestamp, costs) (~190-byte
--    entries compared column by column, float8[] included). Same meaning:
--    one run of a program on a platform is stored once. The key is
--    tcl_measurement_dedup_key() below, of all four; the writer computes
--    the same bytes in C++ (upload_store.cc, measurement_dedup_key) and a
--    test checks that both agree. It is a uuid only because that is
--    PostgreSQL's fixed-size 16-byte type (24-byte index entries, compared
--    with one memcmp). Costs are hashed by value bits, so the one change
--    against the old key is that it no longer equates distinct bit patterns
--    that compare equal (-0 and 0 are folded to 0 on both sides, NaN cannot
--    occur: the record parser accepts finite costs only). An accidental
--    collision among 2^40 rows has probability ~2^-49.
--    convert_to() is STABLE only because of the database encoding, which
--    never changes for a database (see tcl_split_hash in 0001).
CREATE FUNCTION tcl_measurement_dedup_key(platform_id bigint, program_id text, ts bigint, costs float8[])
  RETURNS uuid
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$
    SELECT encode(substr(sha256(int8send(platform_id) || convert_to(program_id, 'UTF8') || '\x00'::bytea
                                || int8send(ts)
                                || coalesce((SELECT string_agg(float8send(c + 0.0::float8), ''::bytea ORDER BY o)
                                             FROM unnest(costs) WITH ORDINALITY AS u(c, o)), ''::bytea)),
                         1, 16), 'hex')::uuid
  $$;

-- Existing rows get their key here (one rewrite of the table). No two rows
-- can share a key: the old unique constraint held and the new key only tells
-- more rows apart.
ALTER TABLE measurements ADD COLUMN dedup_key uuid;
UPDATE measurements SET dedup_key = tcl_measurement_dedup_key(platform_id, program_id, timestamp, costs);
ALTER TABLE measurements
  ALTER COLUMN dedup_key SET NOT NULL,
  DROP CONSTRAINT measurements_platform_id_program_id_timestamp_costs_key,
  ADD CONSTRAINT measurements_dedup_key_key UNIQUE (dedup_key);

-- 4. Fewer index entries per row.
--    measurements_upload_id: nothing reads measurements by upload (reports
--    are stored in uploads.report).
--    The primary keys of measurements and candidates become
--    (platform_id, id), which is what readers use (a platform's rows in id
--    order: UploadStore::for_each_record), so the separate (platform_id, id)
--    indexes go. id stays an identity, unique by construction; no foreign
--    key refers to these ids.
--    programs_task_id: nothing looks programs up by task (the platform
--    counts join through programs' primary key); re-create it when a reader
--    comes.
--    A measurement now has two index entries besides its dedup key's
--    instead of three, a new program one instead of two (~1 us each).
DROP INDEX measurements_upload_id;
ALTER TABLE measurements DROP CONSTRAINT measurements_pkey, ADD PRIMARY KEY (platform_id, id);
DROP INDEX measurements_platform_id;
ALTER TABLE candidates DROP CONSTRAINT candidates_pkey, ADD PRIMARY KEY (platform_id, id);
DROP INDEX candidates_platform_id;
DROP INDEX programs_task_id;
