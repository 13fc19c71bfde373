-- 0008_tuning_runs.sql — tuning runs (issue 49): what `tclctl tune` reports
-- of a run after every round, so that the console can draw its curve
-- (registry/tuning_run_store.h; PUT/GET /v1/platforms/{name}/tuning-runs).
--
-- id: the client's run id (tclctl: "tune-" and the first 16 hex of the
--   SHA-256 of the run folder's run.json), unique per platform; a resumed
--   run sends the same id and updates its row.
-- rounds: one object per round, in order: {"measured", "network_seconds"
--   (null until every task has a valid program), "wall_seconds"}; written
--   whole by every PUT (the api checks its shape).
CREATE TABLE tuning_runs (
  platform_id bigint NOT NULL REFERENCES platforms (id),
  id          text NOT NULL CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'),
  network     text NOT NULL,
  model       text NOT NULL,
  seed        bigint NOT NULL,
  rounds      jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(rounds) = 'array'),
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (platform_id, id)
);
