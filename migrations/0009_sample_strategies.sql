-- 0009_sample_strategies.sql — the sampler's fast and uniform strategies
-- (sampler/rdu.h; fast is the default since issue 50's study,
-- docs/sampler.md) are stored like the others. Without this a request for
-- either was refused by the CHECK of 0006.
ALTER TABLE sample_requests
  DROP CONSTRAINT sample_requests_strategy_check,
  ADD CONSTRAINT sample_requests_strategy_check
    CHECK (strategy IN ('rdu', 'random', 'r', 'd', 'u', 'fast', 'uniform'));
