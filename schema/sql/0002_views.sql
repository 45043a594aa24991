-- Views over the stored columns for the questions that must be fast. Each
-- one stays exact when a batch is replayed: they keep a row's latest value
-- (ReplacingMergeTree) or count distinct keys (uniqExact), never sums.

CREATE MATERIALIZED VIEW IF NOT EXISTS run_rule_status_mv TO run_rule_status AS
SELECT run_id, rule_id, seq, ts, status, mode, stream_seq FROM verdicts;

CREATE MATERIALIZED VIEW IF NOT EXISTS runs_mv TO runs AS
SELECT
    run_id,
    max(if(type = 'run.start', agent, '')) AS agent,
    min(ts) AS started_at,
    max(if(type IN ('run.finish', 'run.error', 'run.cancel'), ts, toDateTime64(0, 3, 'UTC'))) AS ended_at,
    max(if(type IN ('run.finish', 'run.error', 'run.cancel'), type, '')) AS outcome,
    max(seq) AS last_seq
FROM events
GROUP BY run_id;

CREATE TABLE IF NOT EXISTS violations_rule_hour (
    rule_id    LowCardinality(String),
    hour       DateTime('UTC'),
    violations AggregateFunction(uniqExact, String, UInt64),
    runs       AggregateFunction(uniqExact, String)
) ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(hour)
ORDER BY (rule_id, hour);

CREATE MATERIALIZED VIEW IF NOT EXISTS violations_rule_hour_mv TO violations_rule_hour AS
SELECT
    rule_id,
    toStartOfHour(ts) AS hour,
    uniqExactState(run_id, seq) AS violations,
    uniqExactState(run_id) AS runs
FROM verdicts
WHERE status = 'violated'
GROUP BY rule_id, hour;

CREATE VIEW IF NOT EXISTS compliance_agent_day AS
SELECT
    r.agent AS agent,
    toDate(r.started_at) AS day,
    uniqExact(r.run_id) AS runs,
    uniqExactIf(r.run_id, s.run_id != '') AS violating,
    1 - violating / runs AS compliance
FROM (SELECT run_id, max(agent) AS agent, min(started_at) AS started_at FROM runs GROUP BY run_id) AS r
LEFT JOIN (SELECT DISTINCT run_id FROM run_rule_status FINAL WHERE status = 'violated') AS s USING (run_id)
GROUP BY agent, day;

CREATE VIEW IF NOT EXISTS open_runs AS
SELECT run_id, max(agent) AS agent, min(started_at) AS started_at, max(last_seq) AS last_seq
FROM runs
GROUP BY run_id
HAVING max(ended_at) = toDateTime64(0, 3, 'UTC');
