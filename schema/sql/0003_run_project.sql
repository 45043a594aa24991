-- The project of a run: what its run.start event names in
-- start.extra.project (a reference trace's top-level "project"), so that
-- runs are listed by project without reading the events' bodies.

ALTER TABLE runs ADD COLUMN IF NOT EXISTS project SimpleAggregateFunction(max, LowCardinality(String)) AFTER agent;

DROP VIEW IF EXISTS runs_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS runs_mv TO runs AS
SELECT
    run_id,
    max(if(type = 'run.start', agent, '')) AS agent,
    max(if(type = 'run.start', JSONExtractString(body, 'start', 'extra', 'project'), '')) AS project,
    min(ts) AS started_at,
    max(if(type IN ('run.finish', 'run.error', 'run.cancel'), ts, toDateTime64(0, 3, 'UTC'))) AS ended_at,
    max(if(type IN ('run.finish', 'run.error', 'run.cancel'), type, '')) AS outcome,
    max(seq) AS last_seq
FROM events
GROUP BY run_id;
