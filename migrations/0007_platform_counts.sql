-- 0007_platform_counts.sql — a platform's counts kept in a table, so that
-- GET /v1/platforms/{name} reads one row instead of recounting the
-- platform's measurements and candidates (issue 18, finding 3: 3-5.7 s a
-- call at 200k rows).
--
-- Who keeps them exact:
--   * registry/upload_store.cc, the only writer of measurements and
--     candidates, adds each upload's new rows in the upload's own
--     transaction while it holds the upload lock. So an upload rolled back
--     or killed adds nothing, a replay (which inserts no row) adds nothing,
--     and two uploads add one after the other. Its transaction says so with
--     SET LOCAL tcl.platform_counts = 'maintained'.
--   * Any other statement that changes measurements or candidates (a
--     DELETE by hand, a test's INSERT) fires the trigger below, which
--     recounts every platform: exact, and O(all rows) for that rare writer
--     only.
-- PlatformStore::recount() keeps the old query; tests check the kept counts
-- against it. Programs and tasks are assumed not to change under stored
-- rows (nothing updates or deletes them while rows refer to them).

-- Membership, so that the distinct programs and tasks of a platform (over
-- its measurements and candidates together) are counted as they arrive: a
-- program or task counts when it becomes the platform's. A program is the
-- platform's when
--   * programs.first_platform_id is the platform: set when an upload to it
--     stores the program (the program is new, so it is new to the platform
--     too). An upload of new programs, the common case, thus writes no
--     membership row at all (a row per program cost 17% more PostgreSQL CPU
--     in bench/upload_e2e.sh). NULL for programs stored before this
--     migration, or (after a recount) when that platform holds no row of the
--     program any more;
--   * or it has a row in platform_programs: a program that another platform
--     stored first (never both).
-- No foreign keys, like the bulk tables (0004): the only writers are the
-- upload store and tcl_recount_platforms().
ALTER TABLE programs ADD COLUMN first_platform_id bigint;
CREATE TABLE platform_programs (
  platform_id bigint NOT NULL,
  program_id  text NOT NULL,
  task_id     bigint NOT NULL,  -- the program's task: new tasks are found without a join
  PRIMARY KEY (platform_id, program_id)
);
CREATE TABLE platform_tasks (
  platform_id bigint NOT NULL,
  task_id     bigint NOT NULL,
  PRIMARY KEY (platform_id, task_id)
);

-- The counts, as PlatformStore::get returns them (registry/platform_store.h
-- PlatformCounts). A platform without a row has nothing stored.
CREATE TABLE platform_counts (
  platform_id  bigint PRIMARY KEY REFERENCES platforms (id),
  programs     bigint NOT NULL CHECK (programs >= 0),
  tasks        bigint NOT NULL CHECK (tasks >= 0),
  measurements bigint NOT NULL CHECK (measurements >= 0),  -- successful (NOT measurements.failed)
  failed       bigint NOT NULL CHECK (failed >= 0),
  candidates   bigint NOT NULL CHECK (candidates >= 0)
);

-- Rebuilds membership and counts from measurements and candidates. Takes
-- the upload lock first (registry/upload_store.cc kUploadLockClass, Object:
-- 0x54434c55, 1), so no upload adds to counts that are being replaced, and
-- each statement after it (READ COMMITTED) sees every committed upload.
CREATE FUNCTION tcl_recount_platforms() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(1413696597, 1);
  DELETE FROM platform_programs;
  DELETE FROM platform_tasks;
  DELETE FROM platform_counts;
  -- Every (platform, program) with rows, first all in platform_programs.
  INSERT INTO platform_programs (platform_id, program_id, task_id)
  SELECT u.platform_id, u.program_id, p.task_id
  FROM (SELECT platform_id, program_id FROM measurements
        UNION
        SELECT platform_id, program_id FROM candidates) u
  JOIN programs p ON p.id = u.program_id;
  INSERT INTO platform_tasks (platform_id, task_id)
  SELECT DISTINCT platform_id, task_id FROM platform_programs;
  INSERT INTO platform_counts (platform_id, programs, tasks, measurements, failed, candidates)
  SELECT pl.id, coalesce(pp.n, 0), coalesce(pt.n, 0), coalesce(m.ok, 0), coalesce(m.failed, 0), coalesce(c.n, 0)
  FROM platforms pl
  LEFT JOIN (SELECT platform_id, count(*) AS n FROM platform_programs GROUP BY 1) pp ON pp.platform_id = pl.id
  LEFT JOIN (SELECT platform_id, count(*) AS n FROM platform_tasks GROUP BY 1) pt ON pt.platform_id = pl.id
  LEFT JOIN (SELECT platform_id, count(*) FILTER (WHERE NOT failed) AS ok, count(*) FILTER (WHERE failed) AS failed
             FROM measurements GROUP BY 1) m ON m.platform_id = pl.id
  LEFT JOIN (SELECT platform_id, count(*) AS n FROM candidates GROUP BY 1) c ON c.platform_id = pl.id;
  -- Then a program's first platform holds it without a row (see above).
  UPDATE programs p SET first_platform_id = NULL
  WHERE p.first_platform_id IS NOT NULL
    AND NOT EXISTS (SELECT FROM platform_programs pp WHERE pp.platform_id = p.first_platform_id AND pp.program_id = p.id);
  DELETE FROM platform_programs pp USING programs p WHERE p.id = pp.program_id AND p.first_platform_id = pp.platform_id;
END $$;

-- After any statement on the two tables that the upload store did not make
-- (it keeps the counts itself): recount. A statement-level trigger without
-- transition tables costs the upload store one call per statement (~2 a
-- slice), nothing per row.
CREATE FUNCTION tcl_platform_counts_check() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('tcl.platform_counts', true) IS DISTINCT FROM 'maintained' THEN
    PERFORM tcl_recount_platforms();
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER measurements_platform_counts AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON measurements
  FOR EACH STATEMENT EXECUTE FUNCTION tcl_platform_counts_check();
CREATE TRIGGER candidates_platform_counts AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON candidates
  FOR EACH STATEMENT EXECUTE FUNCTION tcl_platform_counts_check();

-- Backfill.
SELECT tcl_recount_platforms();
