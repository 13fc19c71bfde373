-- 0006_sample_requests.sql — what registry/sample_store.cc needs beyond 0001.
--
-- strategy: the ablation strategies r, d and u (one RDU term alone) are
--   stored like rdu and random.
-- params: the request as given and as resolved; always an object.
-- sample_request_items: refresh() looks items up by request and program.
ALTER TABLE sample_requests
  DROP CONSTRAINT sample_requests_strategy_check,
  ADD CONSTRAINT sample_requests_strategy_check CHECK (strategy IN ('rdu', 'random', 'r', 'd', 'u')),
  ADD CONSTRAINT sample_requests_params_object CHECK (jsonb_typeof(params) = 'object');
-- Open requests of a platform (pending programs, progress gauges).
CREATE INDEX sample_requests_open ON sample_requests (platform_id) WHERE status = 'open';
