-- 0001_schema.sql — the TCL registry schema (DESIGN §7).
--
-- Applied by registry/migrations.cc inside one transaction; never edit this
-- file once shipped: add 0002_*.sql instead (the checksum is verified).
-- Names match the C++ and JSON names (error_no, all_cost, workload_key, ...).
-- Every id is a bigint identity; every time is timestamptz (UTC on the wire).

-- Hardware platforms. `name` is the handle used in URLs.
CREATE TABLE platforms (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name            text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
  target          text NOT NULL,
  -- num_cores, vector_unit_bytes, cache_line_bytes, max_shared_memory_per_block,
  -- max_local_memory_per_block, max_threads_per_block, max_vthread_extent, warp_size
  hardware_params bigint[] NOT NULL CHECK (array_ndims(hardware_params) = 1
                                           AND cardinality(hardware_params) = 8
                                           AND array_position(hardware_params, NULL) IS NULL),
  description     text NOT NULL DEFAULT '',
  created_at      timestamptz NOT NULL DEFAULT now()
);

-- The split hash of a task: the first 8 bytes of sha256(utf8(workload_key)),
-- read as a big-endian signed int64. Fixed forever (train/eval splits depend
-- on it); core/ can recompute it offline with core/sha256.h. convert_to() is
-- only STABLE because it depends on the database encoding, which never
-- changes for a database, so declaring the wrapper IMMUTABLE is sound.
CREATE FUNCTION tcl_split_hash(workload_key text) RETURNS bigint
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT ('x' || substr(encode(sha256(convert_to(workload_key, 'UTF8')), 'hex'), 1, 16))::bit(64)::bigint $$;

-- Tasks (workloads). Platform-independent: the target is not part of a task.
CREATE TABLE tasks (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- Bounded so the unique btree entry always fits (PostgreSQL caps it near 2.7 kB).
  workload_key text NOT NULL UNIQUE CHECK (octet_length(workload_key) BETWEEN 1 AND 2000),
  split_hash   bigint NOT NULL GENERATED ALWAYS AS (tcl_split_hash(workload_key)) STORED,
  created_at   timestamptz NOT NULL DEFAULT now()
);

-- Programs = (workload_key, steps). `id` is core/'s hash of the canonical
-- form of both (hex); the same program measured on two platforms is one row.
CREATE TABLE programs (
  id         text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16,128}$'),
  task_id    bigint NOT NULL REFERENCES tasks (id),
  steps      jsonb NOT NULL CHECK (jsonb_typeof(steps) = 'array'),  -- canonical step list
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX programs_task_id ON programs (task_id);

-- One row per upload request (candidates or measurements). A retry with the
-- same Idempotency-Key on the same platform finds this row instead of
-- inserting again; body_sha256 tells a true retry from a reused key.
-- Keys are NULL when the client sent none (NULLs never collide).
CREATE TABLE uploads (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  platform_id     bigint NOT NULL REFERENCES platforms (id),
  kind            text NOT NULL CHECK (kind IN ('measurements', 'candidates')),
  idempotency_key text CHECK (idempotency_key <> '' AND octet_length(idempotency_key) <= 255),
  body_sha256     text NOT NULL CHECK (body_sha256 ~ '^[0-9a-f]{64}$'),
  report          jsonb NOT NULL DEFAULT '{}',  -- {"accepted", "duplicates", "rejected": [...]}
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (platform_id, idempotency_key)
);

-- Measurements. `record` is the uploaded line, byte-exact, so GET returns
-- what was sent. `failed` (error_no <> 0 or a cost <= 0, DESIGN §2) is
-- derived so that no writer can get it wrong; failed rows are stored and
-- counted, never used as labels.
--
-- Dedup key: (platform_id, program_id, timestamp, costs). The same program
-- may be measured many times on one platform (each run has its own timestamp
-- or costs) and every run is kept; uploading the same run again (the same
-- log file twice, or converted to another record version) is a duplicate.
CREATE TABLE measurements (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  platform_id bigint NOT NULL REFERENCES platforms (id),
  program_id  text NOT NULL REFERENCES programs (id),
  upload_id   bigint NOT NULL REFERENCES uploads (id),
  costs       float8[] NOT NULL CHECK (array_ndims(costs) IS NULL OR array_ndims(costs) = 1)
                                CHECK (array_position(costs, NULL) IS NULL),
  error_no    integer NOT NULL,  -- TVM MeasureErrorNO; unknown values are kept
  all_cost    float8 NOT NULL,
  timestamp   bigint NOT NULL,   -- as in the record (seconds since the epoch)
  record      text NOT NULL,
  failed      boolean NOT NULL GENERATED ALWAYS AS
                (error_no <> 0 OR cardinality(costs) = 0 OR 0 >= ANY (costs)) STORED,
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (platform_id, program_id, timestamp, costs)
);
-- A platform's measurements in upload order (GET .../measurements, training).
CREATE INDEX measurements_platform_id ON measurements (platform_id, id);
CREATE INDEX measurements_upload_id ON measurements (upload_id);

-- Candidate pool: unmeasured programs offered for a platform. A program is
-- in a platform's pool at most once; `record` is the uploaded line.
CREATE TABLE candidates (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  platform_id bigint NOT NULL REFERENCES platforms (id),
  program_id  text NOT NULL REFERENCES programs (id),
  upload_id   bigint NOT NULL REFERENCES uploads (id),
  record      text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (platform_id, program_id)
);

-- The student lineage. A row is inserted in one statement with its weights,
-- so a version is visible only when complete. weights_sha256 (and
-- fisher_sha256) are checked against the bytes by the database itself.
-- `status` is the promotion gate's verdict; which version serves traffic is
-- decided by `aliases` only.
CREATE TABLE model_versions (
  version        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  parent         bigint REFERENCES model_versions (version),
  platforms      text[] NOT NULL,  -- platform names this version covers, in onboarding order
  weights        bytea NOT NULL,
  weights_sha256 text NOT NULL,
  weights_size   bigint NOT NULL GENERATED ALWAYS AS (octet_length(weights)) STORED,
  fisher         bytea,            -- EWC diagonal Fisher beside the weights
  fisher_sha256  text,
  config         jsonb NOT NULL DEFAULT '{}',  -- training config (architecture, losses, seeds)
  metrics        jsonb NOT NULL DEFAULT '{}',  -- per-platform evaluation
  status         text NOT NULL DEFAULT 'candidate'
                   CHECK (status IN ('candidate', 'promoted', 'rejected')),
  created_at     timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT model_versions_parent_older CHECK (parent < version),
  CONSTRAINT model_versions_weights_sha256 CHECK (weights_sha256 = encode(sha256(weights), 'hex')),
  CONSTRAINT model_versions_fisher_pair CHECK ((fisher IS NULL) = (fisher_sha256 IS NULL)),
  CONSTRAINT model_versions_fisher_sha256 CHECK (fisher_sha256 = encode(sha256(fisher), 'hex'))
);

-- Named pointers into the lineage ("production" is what predict uses).
-- Every change is NOTIFYed on channel tcl_alias_changed (payload
-- {"alias": name, "version": n}) so every replica reloads.
CREATE TABLE aliases (
  name       text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
  version    bigint NOT NULL REFERENCES model_versions (version),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Who moved which alias when; rollback is moving it back (a new row).
CREATE TABLE alias_history (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  alias        text NOT NULL REFERENCES aliases (name),
  from_version bigint REFERENCES model_versions (version),  -- NULL when the alias was created
  to_version   bigint NOT NULL REFERENCES model_versions (version),
  actor        text NOT NULL,  -- token name
  reason       text NOT NULL DEFAULT '',
  moved_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX alias_history_alias ON alias_history (alias, id);

CREATE FUNCTION tcl_notify_alias_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tcl_alias_changed',
                    json_build_object('alias', NEW.name, 'version', NEW.version)::text);
  RETURN NULL;
END $$;
CREATE TRIGGER aliases_notify AFTER INSERT OR UPDATE ON aliases
  FOR EACH ROW EXECUTE FUNCTION tcl_notify_alias_changed();

-- RDU (or random) selections of candidates to measure.
CREATE TABLE sample_requests (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  platform_id   bigint NOT NULL REFERENCES platforms (id),
  strategy      text NOT NULL CHECK (strategy IN ('rdu', 'random')),
  params        jsonb NOT NULL DEFAULT '{}',  -- budget or fraction, weights {r,d,u}, seed
  model_version bigint REFERENCES model_versions (version),  -- NULL when no model was used
  -- open: items wait for measurements; completed: all measured.
  status        text NOT NULL DEFAULT 'open'
                  CHECK (status IN ('pending', 'open', 'completed', 'failed', 'cancelled')),
  error         text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  completed_at  timestamptz
);
CREATE INDEX sample_requests_platform_id ON sample_requests (platform_id, id);

-- The picks of a request, in pick order, with the score parts that chose them.
CREATE TABLE sample_request_items (
  sample_request_id bigint NOT NULL REFERENCES sample_requests (id) ON DELETE CASCADE,
  rank              integer NOT NULL CHECK (rank >= 0),  -- 0 = picked first
  program_id        text NOT NULL REFERENCES programs (id),
  score_r           float8,  -- representativeness (NULL for random)
  score_d           float8,  -- diversity
  score_u           float8,  -- uncertainty
  score             float8,  -- alpha*r + beta*d + gamma*u
  measured          boolean NOT NULL DEFAULT false,
  PRIMARY KEY (sample_request_id, rank),
  UNIQUE (sample_request_id, program_id)
);
CREATE INDEX sample_request_items_program_id ON sample_request_items (program_id) WHERE NOT measured;

-- Training and distillation jobs. Workers claim the oldest queued job with
-- FOR UPDATE SKIP LOCKED and hold a lease they extend by heartbeat; a running
-- job whose lease expired is claimed again (attempts counts the claims).
CREATE TABLE training_jobs (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind             text NOT NULL CHECK (kind IN ('train', 'distill')),
  platform_id      bigint NOT NULL REFERENCES platforms (id),
  options          jsonb NOT NULL DEFAULT '{}',
  state            text NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  worker           text,
  lease_expires_at timestamptz,
  heartbeat_at     timestamptz,
  progress         jsonb NOT NULL DEFAULT '{}',  -- epoch, loss, ...
  error            text,
  result_version   bigint REFERENCES model_versions (version),
  created_at       timestamptz NOT NULL DEFAULT now(),
  started_at       timestamptz,
  finished_at      timestamptz,
  CONSTRAINT training_jobs_running_leased CHECK (state <> 'running' OR (worker IS NOT NULL AND lease_expires_at IS NOT NULL AND started_at IS NOT NULL)),
  CONSTRAINT training_jobs_finished CHECK ((state IN ('succeeded', 'failed', 'cancelled')) = (finished_at IS NOT NULL))
);
CREATE INDEX training_jobs_queued ON training_jobs (id) WHERE state = 'queued';
CREATE INDEX training_jobs_running ON training_jobs (lease_expires_at) WHERE state = 'running';
CREATE INDEX training_jobs_platform_id ON training_jobs (platform_id, id);

-- API bearer tokens. Only the SHA-256 of the token is stored. A name is
-- unique among unrevoked tokens, so a revoked name can be reused.
CREATE TABLE api_tokens (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name         text NOT NULL CHECK (name <> '' AND octet_length(name) <= 128),
  scope        text NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
  token_sha256 text NOT NULL UNIQUE CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz
);
CREATE UNIQUE INDEX api_tokens_active_name ON api_tokens (name) WHERE revoked_at IS NULL;
