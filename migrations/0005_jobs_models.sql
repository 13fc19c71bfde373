-- 0005_jobs_models.sql — what registry/job_queue.cc and registry/model_store.cc
-- need beyond 0001.

-- training_jobs -------------------------------------------------------------
-- cancel_requested_at: cancelling a running job only asks; the job becomes
--   'cancelled' when its worker next heartbeats or finishes (or, if the
--   worker died, when its lease expires). Never set on a queued job: that one
--   is cancelled at once.
-- max_attempts: how many claims a job gets (fixed at enqueue). A running job
--   whose lease expired with attempts = max_attempts is failed, not retried.
ALTER TABLE training_jobs
  ADD COLUMN cancel_requested_at timestamptz,
  ADD COLUMN max_attempts integer NOT NULL DEFAULT 3 CHECK (max_attempts BETWEEN 1 AND 100),
  ADD CONSTRAINT training_jobs_attempts_bounded CHECK (attempts <= max_attempts),
  ADD CONSTRAINT training_jobs_options_object CHECK (jsonb_typeof(options) = 'object'),
  ADD CONSTRAINT training_jobs_progress_object CHECK (jsonb_typeof(progress) = 'object');

-- One lineage (DESIGN §5): at most one distill job runs at a time. Every row
-- of this index has the key 'distill', so unique means "at most one row".
-- JobQueue::claim skips queued distill jobs while one runs; this index is the
-- guard against two workers claiming two of them at the same instant.
CREATE UNIQUE INDEX training_jobs_one_running_distill ON training_jobs (kind)
  WHERE kind = 'distill' AND state = 'running';

-- model_versions --------------------------------------------------------------
-- training_summary: what the training run reports about itself (epochs,
--   losses, data sizes, wall time); `metrics` stays the evaluation.
-- status_reasons: why the promotion gate chose `status` (any JSON value),
--   set together with status_changed_at by ModelStore::set_status.
ALTER TABLE model_versions
  ADD COLUMN training_summary  jsonb NOT NULL DEFAULT '{}',
  ADD COLUMN status_reasons    jsonb NOT NULL DEFAULT '{}',
  ADD COLUMN status_changed_at timestamptz,
  ADD CONSTRAINT model_versions_has_platforms CHECK (cardinality(platforms) >= 1
                                                     AND array_position(platforms, NULL) IS NULL);

-- The aliases pointing at a version (ModelStore::get, lineage).
CREATE INDEX aliases_version ON aliases (version);
