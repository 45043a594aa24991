-- The storage schema for the ClickHouse cluster "ponens": generated from
-- schema/sql/*.sql by `go run ./internal/gen/clusterddl`; do not edit.
-- Run it once, on any node: every statement is ON CLUSTER.

CREATE TABLE IF NOT EXISTS schema_migrations ON CLUSTER ponens (version UInt32, name String, applied_at DateTime DEFAULT now()) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/all/{database}/{table}', '{replica}') ORDER BY version;

CREATE TABLE IF NOT EXISTS events_local ON CLUSTER ponens (
    run_id      String,
    seq         UInt64,
    ts          DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    type        LowCardinality(String),
    agent       LowCardinality(String),
    action_type LowCardinality(String),
    target      String CODEC(ZSTD(1)),
    capability  LowCardinality(String),
    body        String CODEC(ZSTD(3)),
    stream_seq  UInt64 CODEC(Delta, ZSTD(1)),
    stored_at   DateTime('UTC') DEFAULT now() CODEC(Delta, ZSTD(1))
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', stream_seq)
PARTITION BY toYYYYMM(ts)
ORDER BY (run_id, seq)
TTL stored_at + INTERVAL 180 DAY
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS events ON CLUSTER ponens AS events_local
ENGINE = Distributed('ponens', currentDatabase(), 'events_local', cityHash64(run_id));

CREATE TABLE IF NOT EXISTS verdicts_local ON CLUSTER ponens (
    run_id           String,
    rule_id          LowCardinality(String),
    seq              UInt64,
    ts               DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    status           Enum8('satisfied' = 1, 'violated' = 2, 'pending' = 3, 'unresolved' = 4),
    leaning          Enum8('' = 0, 'satisfy' = 1, 'violate' = 2),
    mode             Enum8('observe' = 1, 'deny' = 2, 'suspend' = 3, 'abort' = 4),
    rule_description LowCardinality(String),
    rule_version     LowCardinality(String),
    cause_subformula String CODEC(ZSTD(1)),
    cause_event      String CODEC(ZSTD(3)),
    stream_seq       UInt64 CODEC(Delta, ZSTD(1))
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', stream_seq)
PARTITION BY toYYYYMM(ts)
ORDER BY (rule_id, run_id, seq)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS verdicts ON CLUSTER ponens AS verdicts_local
ENGINE = Distributed('ponens', currentDatabase(), 'verdicts_local', cityHash64(run_id));

CREATE TABLE IF NOT EXISTS run_rule_status_local ON CLUSTER ponens (
    run_id  String,
    rule_id LowCardinality(String),
    seq     UInt64,
    ts      DateTime64(3, 'UTC'),
    status  Enum8('satisfied' = 1, 'violated' = 2, 'pending' = 3, 'unresolved' = 4),
    mode    Enum8('observe' = 1, 'deny' = 2, 'suspend' = 3, 'abort' = 4),
    stream_seq UInt64
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', stream_seq)
ORDER BY (run_id, rule_id);

CREATE TABLE IF NOT EXISTS run_rule_status ON CLUSTER ponens AS run_rule_status_local
ENGINE = Distributed('ponens', currentDatabase(), 'run_rule_status_local', cityHash64(run_id));

CREATE TABLE IF NOT EXISTS runs_local ON CLUSTER ponens (
    run_id     String,
    agent      SimpleAggregateFunction(max, LowCardinality(String)),
    started_at SimpleAggregateFunction(min, DateTime64(3, 'UTC')),
    ended_at   SimpleAggregateFunction(max, DateTime64(3, 'UTC')),
    outcome    SimpleAggregateFunction(max, LowCardinality(String)),
    last_seq   SimpleAggregateFunction(max, UInt64)
) ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')
ORDER BY run_id;

CREATE TABLE IF NOT EXISTS runs ON CLUSTER ponens AS runs_local
ENGINE = Distributed('ponens', currentDatabase(), 'runs_local', cityHash64(run_id));

CREATE TABLE IF NOT EXISTS rule_versions_local ON CLUSTER ponens (
    rule_id     LowCardinality(String),
    version     String,
    description String,
    mode        Enum8('observe' = 1, 'deny' = 2, 'suspend' = 3, 'abort' = 4),
    text        String,
    formula     String CODEC(ZSTD(3)),
    text_hash   String,
    seen_at     DateTime64(3, 'UTC')
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', seen_at)
ORDER BY (rule_id, version);

CREATE TABLE IF NOT EXISTS rule_versions ON CLUSTER ponens AS rule_versions_local
ENGINE = Distributed('ponens', currentDatabase(), 'rule_versions_local', cityHash64(rule_id));

CREATE TABLE IF NOT EXISTS dead_letters_local ON CLUSTER ponens (
    stream_seq UInt64,
    ts         DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    subject    String,
    reason     LowCardinality(String),
    source     LowCardinality(String),
    error      String CODEC(ZSTD(1)),
    body       String CODEC(ZSTD(3)),
    truncated  UInt64
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')
PARTITION BY toYYYYMM(ts)
ORDER BY stream_seq
TTL toDateTime(ts) + INTERVAL 30 DAY;

CREATE TABLE IF NOT EXISTS dead_letters ON CLUSTER ponens AS dead_letters_local
ENGINE = Distributed('ponens', currentDatabase(), 'dead_letters_local', intHash64(stream_seq));

CREATE TABLE IF NOT EXISTS record_entries_local ON CLUSTER ponens (
    symbol         String,
    file           String,
    ref            String,
    kind           LowCardinality(String),
    grade          LowCardinality(String),
    established_at DateTime64(3, 'UTC'),
    source_hash    String,
    regions        UInt32,
    gaps           UInt32,
    superseded     Bool,
    run_id         String
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', established_at)
ORDER BY (symbol, file, ref);

CREATE TABLE IF NOT EXISTS record_entries ON CLUSTER ponens AS record_entries_local
ENGINE = Distributed('ponens', currentDatabase(), 'record_entries_local', cityHash64(symbol, file));

CREATE MATERIALIZED VIEW IF NOT EXISTS run_rule_status_mv ON CLUSTER ponens TO run_rule_status_local AS
SELECT run_id, rule_id, seq, ts, status, mode, stream_seq FROM verdicts_local;

CREATE MATERIALIZED VIEW IF NOT EXISTS runs_mv ON CLUSTER ponens TO runs_local AS
SELECT
    run_id,
    max(if(type = 'run.start', agent, '')) AS agent,
    min(ts) AS started_at,
    max(if(type IN ('run.finish', 'run.error', 'run.cancel'), ts, toDateTime64(0, 3, 'UTC'))) AS ended_at,
    max(if(type IN ('run.finish', 'run.error', 'run.cancel'), type, '')) AS outcome,
    max(seq) AS last_seq
FROM events_local
GROUP BY run_id;

CREATE TABLE IF NOT EXISTS violations_rule_hour_local ON CLUSTER ponens (
    rule_id    LowCardinality(String),
    hour       DateTime('UTC'),
    violations AggregateFunction(uniqExact, String, UInt64),
    runs       AggregateFunction(uniqExact, String)
) ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')
PARTITION BY toYYYYMM(hour)
ORDER BY (rule_id, hour);

CREATE TABLE IF NOT EXISTS violations_rule_hour ON CLUSTER ponens AS violations_rule_hour_local
ENGINE = Distributed('ponens', currentDatabase(), 'violations_rule_hour_local', cityHash64(rule_id));

CREATE MATERIALIZED VIEW IF NOT EXISTS violations_rule_hour_mv ON CLUSTER ponens TO violations_rule_hour_local AS
SELECT
    rule_id,
    toStartOfHour(ts) AS hour,
    uniqExactState(run_id, seq) AS violations,
    uniqExactState(run_id) AS runs
FROM verdicts_local
WHERE status = 'violated'
GROUP BY rule_id, hour;

CREATE VIEW IF NOT EXISTS compliance_agent_day ON CLUSTER ponens AS
SELECT
    r.agent AS agent,
    toDate(r.started_at) AS day,
    uniqExact(r.run_id) AS runs,
    uniqExactIf(r.run_id, s.run_id != '') AS violating,
    1 - violating / runs AS compliance
FROM (SELECT run_id, max(agent) AS agent, min(started_at) AS started_at FROM runs GROUP BY run_id) AS r
LEFT JOIN (SELECT DISTINCT run_id FROM run_rule_status FINAL WHERE status = 'violated') AS s USING (run_id)
GROUP BY agent, day;

CREATE VIEW IF NOT EXISTS open_runs ON CLUSTER ponens AS
SELECT run_id, max(agent) AS agent, min(started_at) AS started_at, max(last_seq) AS last_seq
FROM runs
GROUP BY run_id
HAVING max(ended_at) = toDateTime64(0, 3, 'UTC');

ALTER TABLE runs_local ON CLUSTER ponens ADD COLUMN IF NOT EXISTS project SimpleAggregateFunction(max, LowCardinality(String)) AFTER agent;

ALTER TABLE runs ON CLUSTER ponens ADD COLUMN IF NOT EXISTS project SimpleAggregateFunction(max, LowCardinality(String)) AFTER agent;

DROP VIEW IF EXISTS runs_mv ON CLUSTER ponens;

CREATE MATERIALIZED VIEW IF NOT EXISTS runs_mv ON CLUSTER ponens TO runs_local AS
SELECT
    run_id,
    max(if(type = 'run.start', agent, '')) AS agent,
    max(if(type = 'run.start', JSONExtractString(body, 'start', 'extra', 'project'), '')) AS project,
    min(ts) AS started_at,
    max(if(type IN ('run.finish', 'run.error', 'run.cancel'), ts, toDateTime64(0, 3, 'UTC'))) AS ended_at,
    max(if(type IN ('run.finish', 'run.error', 'run.cancel'), type, '')) AS outcome,
    max(seq) AS last_seq
FROM events_local
GROUP BY run_id;

ALTER TABLE dead_letters_local ON CLUSTER ponens MODIFY SETTING non_replicated_deduplication_window = 1000;

ALTER TABLE rule_versions_local ON CLUSTER ponens MODIFY SETTING non_replicated_deduplication_window = 1000;

DROP TABLE IF EXISTS record_entries ON CLUSTER ponens SYNC;

DROP TABLE IF EXISTS record_entries_local ON CLUSTER ponens SYNC;

CREATE TABLE IF NOT EXISTS record_entries_local ON CLUSTER ponens (
    symbol         String,
    file           String,
    run_id         String,
    ref            String,
    kind           LowCardinality(String),
    grade          LowCardinality(String),
    established_at DateTime64(3, 'UTC'),
    source_hash    String,
    regions        UInt32,
    gaps           UInt32,
    superseded     Bool,
    stored_at      DateTime64(3, 'UTC')
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', stored_at)
ORDER BY (symbol, file, run_id, ref);

CREATE TABLE IF NOT EXISTS record_entries ON CLUSTER ponens AS record_entries_local
ENGINE = Distributed('ponens', currentDatabase(), 'record_entries_local', cityHash64(symbol, file));

CREATE VIEW IF NOT EXISTS run_rule_matrix ON CLUSTER ponens AS
SELECT
    m.run_id AS run_id,
    m.rule_id AS rule_id,
    if(empty(s.run_id), 'satisfied', toString(s.status)) AS status,
    s.seq AS seq
FROM (
    SELECT run_id, rule_id
    FROM (SELECT DISTINCT run_id FROM runs) AS r
    CROSS JOIN (
        SELECT DISTINCT if(version IN ('', '1'), rule_id, concat(rule_id, '@', version)) AS rule_id FROM rule_versions
        UNION DISTINCT
        SELECT DISTINCT rule_id FROM run_rule_status
    ) AS k
) AS m
LEFT JOIN (SELECT run_id, rule_id, status, seq FROM run_rule_status FINAL) AS s
    ON s.run_id = m.run_id AND s.rule_id = m.rule_id;

INSERT INTO schema_migrations (version, name) VALUES (1, '0001_tables'), (2, '0002_views'), (3, '0003_run_project'), (4, '0004_dedup_window'), (5, '0005_record_entries_by_run'), (6, '0006_run_rule_matrix');
